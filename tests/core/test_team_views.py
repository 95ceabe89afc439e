"""Presence leases, the team panes' read side, and claim/presence changes announced live.

Leases expire by an injected clock, never by waiting; the panes' "next run" is computed for a
fixed now. The watcher test writes through another store (its own engine and connections), as
another desk would, and waits on the bus with a generous bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from core.domain.status import TaskStatus
from core.events import BusEvent, EventBus, ReviewersChanged
from core.store import Store
from core.store.batches import BatchItem, BatchRepository
from core.store.schedules import ScheduleRepository
from core.store.watch import ChangeWatcher
from core.tasks.claims import Claims
from core.tasks.presence import PRESENCE_LEASE, Presence
from core.tasks.team_views import TeamViews

T0 = datetime(2030, 1, 1, 8, 0, tzinfo=UTC)
TIMEOUT = 10.0  # generous for a loaded machine; the desk tests hold the 2 s bound


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    opened = await Store.open(db_url)
    yield opened
    await opened.close()


async def test_presence_is_a_short_lease_that_lapses_unless_renewed(store: Store) -> None:
    clock = Clock()
    presence = Presence(store, clock=clock)
    task = await store.create_task("looked at by two")
    await presence.viewing(task.id, "alice")
    await presence.viewing(task.id, "bob")  # presence refuses nobody, unlike a claim
    assert await presence.viewers([task.id]) == {task.id: ["alice", "bob"]}

    clock.now = T0 + PRESENCE_LEASE - timedelta(seconds=1)
    await presence.viewing(task.id, "alice")  # alice's desk renews, bob's has gone quiet
    clock.now = T0 + PRESENCE_LEASE
    assert await presence.viewers([task.id]) == {task.id: ["alice"]}
    clock.now = T0 + 2 * PRESENCE_LEASE
    assert await presence.viewers() == {}


async def test_looking_at_another_task_or_leaving_ends_presence(store: Store) -> None:
    clock = Clock()
    presence = Presence(store, clock=clock)
    first = await store.create_task("first")
    second = await store.create_task("second")
    await presence.viewing(first.id, "alice")
    await presence.viewing(second.id, "alice")
    assert await presence.viewers() == {second.id: ["alice"]}
    assert await presence.left(second.id, "alice")
    assert not await presence.left(second.id, "alice")
    assert await presence.viewers() == {}


async def test_batches_are_listed_with_their_progress(store: Store) -> None:
    repo = BatchRepository(store)
    items = [BatchItem(key=str(n), text=f"row {n}") for n in range(4)]
    result = await repo.queue("b" * 64, "flagged.jsonl", items)
    await store.update_task(result.task_ids[0], status=TaskStatus.CLOSED)
    await store.update_task(result.task_ids[1], status=TaskStatus.NEEDS_REVIEW)

    [batch] = await TeamViews(store).batches()
    assert (batch.name, batch.rows, batch.total, batch.decided) == ("flagged.jsonl", 4, 4, 1)
    assert batch.progress == 0.25
    assert batch.by_status == {TaskStatus.OPEN: 2, TaskStatus.NEEDS_REVIEW: 1, TaskStatus.CLOSED: 1}
    assert batch.status_summary() == "2 open · 1 needs_review · 1 closed"


async def test_schedules_show_their_next_run_for_a_fixed_now(store: Store) -> None:
    task = await store.create_task("check the feeds", title="Heartbeat: feeds")
    repo = ScheduleRepository(store)
    ahead = await repo.add(
        task.id, cron="0 9 * * *", interval_s=None, checklist=None, verify_heartbeat=True, next_run_at=T0
    )
    views = TeamViews(store, clock=lambda: T0 - timedelta(minutes=5))
    [shown] = await views.schedules()
    assert (shown.schedule_id, shown.every, shown.next_run, shown.due) == (
        ahead.id,
        "cron 0 9 * * *",
        T0,
        False,
    )
    assert shown.last_verdict is None and shown.enabled and shown.verify_heartbeat

    # Overdue (no desk or worker fired it yet): due now, and the cron's next match after now.
    await repo.record_verdict(ahead.id, "not_achieved: goal_missed")
    [late] = await TeamViews(store, clock=lambda: T0 + timedelta(hours=3), cron_timezone="UTC").schedules()
    assert late.due and late.next_run == datetime(2030, 1, 2, 9, 0, tzinfo=UTC)
    assert late.last_verdict == "not_achieved: goal_missed"


async def test_assigned_lists_each_reviewers_claimed_tasks(store: Store) -> None:
    clock = Clock()
    claims = Claims(store, clock=clock)
    mine = await store.create_task("mine", title="Mine")
    theirs = await store.create_task("theirs", title="Theirs")
    await store.create_task("nobody's")
    await claims.claim(mine.id, "alice")
    await claims.claim(theirs.id, "bob")
    views = TeamViews(store, clock=clock)
    assert [a.task.title for a in await views.assigned("alice")] == ["Mine"]
    assert {a.task.title for a in await views.assigned(None)} == {"Mine", "Theirs"}
    assert await views.reviewers() == ["alice", "bob"]


async def test_claims_and_presence_from_another_connection_are_announced(store: Store) -> None:
    bus = EventBus()
    seen: list[str] = []
    arrived = asyncio.Event()

    def on(event: BusEvent) -> None:
        if isinstance(event, ReviewersChanged):
            seen.extend(event.task_ids)
            arrived.set()

    async def until(task_id: str) -> None:
        async with asyncio.timeout(TIMEOUT):
            while task_id not in seen:
                arrived.clear()
                await arrived.wait()
        seen.clear()

    bus.subscribe(on)
    watcher = ChangeWatcher(store, bus)
    await watcher.start()
    other = await Store.open(store.url)
    try:
        async with asyncio.timeout(TIMEOUT):
            await watcher.ready.wait()
        task = await other.create_task("watched")
        await Claims(other).claim(task.id, "alice")
        await until(task.id)
        await Claims(other).take_over(task.id, "bob", confirm=True)
        await until(task.id)
        await Claims(other).release(task.id, "bob")
        await until(task.id)
        await Presence(other).viewing(task.id, "carol")
        await until(task.id)
        await Presence(other).left(task.id, "carol")
        await until(task.id)
    finally:
        await other.close()
        await watcher.close()
