"""Review claims: leases, renewal, release and take-over, and "next task" under contention.

Expiry is driven by an injected clock, never by waiting. The contention test starts its
claimers together on a barrier, each on its own store (its own engine and connections), as
desks on several machines would be.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert

from core.domain.facts import EventKind
from core.domain.queue import QueueFilter
from core.domain.status import TaskStatus
from core.store import Store
from core.store.models import TaskRow
from core.tasks.claims import DEFAULT_LEASE, ClaimHeld, Claims

T0 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    opened = await Store.open(db_url)
    yield opened
    await opened.close()


async def review_task(store: Store, text: str) -> str:
    task = await store.create_task(text)
    await store.update_task(task.id, status=TaskStatus.NEEDS_REVIEW)
    return task.id


async def kinds(store: Store, task_id: str) -> list[str]:
    return [e.kind for e in await store.get_task_events(task_id)]


async def test_a_claimed_task_is_held_against_others_until_its_lease_ends(store: Store) -> None:
    clock = Clock()
    claims = Claims(store, clock=clock)
    task_id = await review_task(store, "claim me")
    mine = await claims.claim(task_id, "ana")
    assert (mine.reviewer, mine.claimed_at, mine.expires_at) == ("ana", T0, T0 + DEFAULT_LEASE)
    with pytest.raises(ClaimHeld, match=r"claimed by ana until \d\d:\d\d"):
        await claims.claim(task_id, "bob")
    assert (await claims.holder(task_id)) == mine
    clock.advance(DEFAULT_LEASE)  # the lease ends exactly now: the task is free again
    assert await claims.holder(task_id) is None
    bobs = await claims.claim(task_id, "bob")
    assert (bobs.reviewer, bobs.claimed_at) == ("bob", T0 + DEFAULT_LEASE)
    assert await kinds(store, task_id) == []  # a lapsed lease is no take-over


async def test_renewal_extends_the_lease_and_keeps_when_it_was_taken(store: Store) -> None:
    clock = Clock()
    claims = Claims(store, clock=clock)
    task_id = await review_task(store, "renew me")
    await claims.claim(task_id, "ana")
    clock.advance(timedelta(minutes=4))
    renewed = await claims.renew(task_id, "ana")
    assert (renewed.claimed_at, renewed.expires_at) == (T0, T0 + timedelta(minutes=9))
    clock.advance(timedelta(minutes=4))  # past the first lease, inside the renewed one
    with pytest.raises(ClaimHeld):
        await claims.claim(task_id, "bob")


async def test_release_frees_the_task_and_is_recorded(store: Store) -> None:
    claims = Claims(store, clock=Clock())
    task_id = await review_task(store, "release me")
    await claims.claim(task_id, "ana")
    assert await claims.release(task_id, "bob") is False  # not bob's to release
    assert await claims.release(task_id, "ana") is True
    assert await claims.holder(task_id) is None
    assert await claims.release(task_id, "ana") is False  # nothing left: nothing recorded twice
    events = await store.get_task_events(task_id)
    assert [(e.kind, e.payload["reviewer"]) for e in events] == [(EventKind.CLAIM_RELEASED, "ana")]
    assert (await claims.claim(task_id, "bob")).reviewer == "bob"


async def test_take_over_needs_confirmation_and_is_recorded(store: Store) -> None:
    clock = Clock()
    claims = Claims(store, clock=clock)
    task_id = await review_task(store, "take me over")
    await claims.claim(task_id, "ana")
    with pytest.raises(ClaimHeld):
        await claims.take_over(task_id, "bob", confirm=False)
    assert (await claims.holder(task_id)).reviewer == "ana"  # type: ignore[union-attr]
    assert await kinds(store, task_id) == []
    clock.advance(timedelta(minutes=1))
    taken = await claims.take_over(task_id, "bob", confirm=True)
    assert (taken.reviewer, taken.claimed_at) == ("bob", T0 + timedelta(minutes=1))
    (event,) = await store.get_task_events(task_id)
    assert event.kind == EventKind.CLAIM_TAKEN_OVER
    assert (event.payload["reviewer"], event.payload["from_reviewer"]) == ("bob", "ana")
    with pytest.raises(ClaimHeld, match="claimed by bob"):
        await claims.claim(task_id, "ana")


async def test_take_over_of_a_free_task_is_a_plain_claim(store: Store) -> None:
    claims = Claims(store, clock=Clock())
    task_id = await review_task(store, "nobody has me")
    assert (await claims.take_over(task_id, "bob", confirm=True)).reviewer == "bob"
    assert await kinds(store, task_id) == []


async def test_next_unclaimed_skips_held_and_other_tasks_and_takes_lapsed_ones(store: Store) -> None:
    clock = Clock()
    claims = Claims(store, clock=clock)
    first = await review_task(store, "first alpha")
    second = await review_task(store, "second beta")
    await store.create_task("still open, not for review")
    await claims.claim(first, "ana")
    got = await claims.next_unclaimed("bob")
    assert got is not None and got.id == second
    assert await claims.next_unclaimed("carl") is None
    assert await claims.next_unclaimed("bob") is None  # bob's own claim is not "unclaimed"
    clock.advance(DEFAULT_LEASE + timedelta(seconds=1))
    got = await claims.next_unclaimed("carl", QueueFilter(text="beta"))
    assert got is not None and got.id == second
    assert [c.reviewer for c in await claims.assigned("carl")] == ["carl"]
    assert [c.task_id for c in await claims.assigned()] == [second]
    assert await claims.for_tasks([first, second]) == {second: await claims.holder(second)}


async def test_claims_of_a_missing_task_say_so(store: Store) -> None:
    from core.errors import StoreError

    with pytest.raises(StoreError, match="no task"):
        await Claims(store).claim("f" * 32, "ana")


async def test_four_concurrent_next_task_claimers_claim_each_task_exactly_once(db_url: str) -> None:
    """200 tasks, 4 claimers on 4 stores started together: every task is handed out once."""
    setup = await Store.open(db_url)
    now = datetime.now(UTC)
    ids = [uuid.uuid4().hex for _ in range(200)]
    rows = [
        {"id": i, "title": f"t{n}", "text": f"t{n}", "status": TaskStatus.NEEDS_REVIEW.value, "version": 1,
         "attempt_count": 0, "read_only": False, "created_at": now, "updated_at": now}
        for n, i in enumerate(ids)
    ]  # fmt: skip
    async with setup.write_engine.begin() as conn:
        await conn.execute(insert(TaskRow), rows)
    await setup.close()

    stores = [await Store.open(db_url) for _ in range(4)]
    barrier = asyncio.Barrier(4)

    async def claimer(store: Store, reviewer: str) -> list[str]:
        claims = Claims(store)
        got: list[str] = []
        await barrier.wait()
        while (task := await claims.next_unclaimed(reviewer)) is not None:
            got.append(task.id)
        return got

    try:
        results = await asyncio.wait_for(
            asyncio.gather(*(claimer(s, f"reviewer{n}") for n, s in enumerate(stores))), timeout=120
        )
    finally:
        for s in stores:
            await s.close()
    claimed = [t for got in results for t in got]
    assert len(claimed) == 200 and set(claimed) == set(ids)
    check = await Store.open(db_url)
    try:
        held = await Claims(check).assigned()
        assert len(held) == 200
        owners = {c.task_id: c.reviewer for c in held}
        for n, got in enumerate(results):
            assert all(owners[t] == f"reviewer{n}" for t in got)
    finally:
        await check.close()
