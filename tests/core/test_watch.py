"""The workspace watcher: writes through another connection reach this workspace's bus.

Each test writes through a second ``Store`` on the same database (its own engine and pool, as
another process would have) and waits, with a generous timeout, for the notice the desk turns
into a row refresh. Runs on both engines: ``PRAGMA data_version`` on SQLite, LISTEN/NOTIFY on
PostgreSQL.
"""

from __future__ import annotations

import asyncio

from core.domain import TaskStatus
from core.events import BusEvent, EventBus, TaskChange, TaskChanged
from core.store import Store
from core.store.watch import ChangeWatcher

TIMEOUT = 10.0  # generous: a loaded machine must not fail the test; the desk test checks < 2 s


class Notices:
    """Collects the bus's task notices and wakes a waiter on each."""

    def __init__(self, bus: EventBus) -> None:
        self.seen: list[TaskChanged] = []
        self._arrived = asyncio.Event()
        bus.subscribe(self._on)

    def _on(self, event: BusEvent) -> None:
        if isinstance(event, TaskChanged):
            self.seen.append(event)
            self._arrived.set()

    async def until(self, task_id: str, version: int) -> TaskChanged:
        async with asyncio.timeout(TIMEOUT):
            while True:
                for notice in self.seen:
                    if notice.task_id == task_id and notice.version == version:
                        return notice
                self._arrived.clear()
                await self._arrived.wait()


async def test_another_connections_writes_are_announced(store: Store) -> None:
    bus = EventBus()
    notices = Notices(bus)
    watcher = ChangeWatcher(store, bus)
    await watcher.start()
    other = await Store.open(store.url)
    try:
        async with asyncio.timeout(TIMEOUT):
            await watcher.ready.wait()
        task = await other.create_task("written elsewhere", title="Elsewhere")
        created = await notices.until(task.id, 1)
        assert created.change is TaskChange.CREATED and created.status is TaskStatus.OPEN

        await other.update_task(task.id, status=TaskStatus.NEEDS_REVIEW)
        moved = await notices.until(task.id, 2)
        assert moved.change is TaskChange.STATUS and moved.status is TaskStatus.NEEDS_REVIEW
    finally:
        await other.close()
        await watcher.close()


async def test_versions_the_bus_already_announced_are_not_repeated(store: Store) -> None:
    bus = EventBus()
    notices = Notices(bus)
    watcher = ChangeWatcher(store, bus)
    await watcher.start()
    other = await Store.open(store.url)
    try:
        async with asyncio.timeout(TIMEOUT):
            await watcher.ready.wait()
        mine = await store.create_task("written here")
        await notices.until(mine.id, 1)
        # A service announces its own write; here the announcement goes out before the write so
        # the order cannot race the watcher, which must then stay quiet about that version.
        bus.publish(
            TaskChanged(task_id=mine.id, change=TaskChange.STATUS, status=TaskStatus.CLOSED, version=2)
        )
        await store.update_task(mine.id, status=TaskStatus.CLOSED)
        theirs = await other.create_task("written elsewhere")  # a later write, to know the watcher looked
        await notices.until(theirs.id, 1)
        assert [(n.task_id, n.version) for n in notices.seen].count((mine.id, 2)) == 1
    finally:
        await other.close()
        await watcher.close()


async def test_closing_stops_the_announcements(store: Store) -> None:
    bus = EventBus()
    watcher = ChangeWatcher(store, bus)
    await watcher.start()
    await watcher.close()
    assert watcher.stop() is None  # closing twice is harmless
    bus.publish(TaskChanged(task_id="x", change=TaskChange.CREATED, status=TaskStatus.OPEN, version=1))
    assert watcher._known == {}  # unsubscribed: it no longer follows the bus
