"""A superseded queue read stops in the database, not only in the caller.

The desk cancels the previous keystroke's reload and count; ``core.store.interrupt`` must then
stop the statement itself (SQLite: ``interrupt()``; PostgreSQL: ``pg_cancel_backend``) and hand
the connection back to the pool usable. Proved without timing: on SQLite a progress handler
holds the statement still while the cancellation lands and then counts how much more of it runs;
on PostgreSQL a table lock holds it, and the server must show it gone while the lock is still
held.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, insert, text
from sqlalchemy.util import await_only

from core.domain.queue import QueueFilter
from core.domain.status import TaskStatus
from core.store import Store, queue_sql
from core.store.interrupt import statements_interrupted
from core.store.models import TaskRow

MOON = QueueFilter(text="moon")
WAIT = 30.0


def _rows(n: int) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    words = ["moon", "gauge", "tide", "ledger"]
    statuses = list(TaskStatus)
    return [
        {
            "id": uuid.uuid4().hex,
            "title": f"Task {i}: {words[i % 4]} and {words[(i * 3) % 4]}",
            "text": f"Question {i} about the {words[(i * 7) % 4]} records.",
            "status": statuses[i % len(statuses)].value,
            "attempt_count": 0,
            "read_only": False,
            "version": 1,
            "created_at": now - timedelta(seconds=n - i),
            "updated_at": now - timedelta(seconds=n - i),
        }
        for i in range(n)
    ]


async def _until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    async def poll() -> None:
        while not await condition():  # noqa: ASYNC110  (a server view or a counter: no event to wait on)
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(poll(), WAIT)
    except TimeoutError:
        pytest.fail(f"never happened: {what}")


async def test_a_cancelled_sqlite_count_stops_in_the_database(sqlite_url: str) -> None:
    store = await Store.open(sqlite_url)
    async with store.write_engine.begin() as conn:
        await conn.execute(insert(TaskRow), _rows(2000))
    expected = await queue_sql.recount_by_status(store, MOON)
    armed, started, go = threading.Event(), threading.Event(), threading.Event()
    steps_after_go = [0]

    def progress() -> int:  # runs in aiosqlite's thread, every few virtual-machine steps
        if not armed.is_set():
            return 0
        if not started.is_set():
            started.set()
            go.wait(WAIT)  # the statement stands still here until the test lets it go
        else:
            steps_after_go[0] += 1
        return 0

    @event.listens_for(store.engine.sync_engine.pool, "checkout")
    def _watch(_dbapi: Any, record: Any, _proxy: Any) -> None:
        await_only(record.driver_connection.set_progress_handler(progress, 20))

    try:
        # The whole count, not cancelled: how many steps it takes after the first.
        armed.set()
        go.set()
        assert await queue_sql.recount_by_status(store, MOON) == expected
        whole = steps_after_go[0]
        assert whole > 10

        started.clear()
        go.clear()
        steps_after_go[0] = 0
        before = statements_interrupted()
        count = asyncio.ensure_future(queue_sql.recount_by_status(store, MOON))
        assert await asyncio.to_thread(started.wait, WAIT)
        count.cancel()

        async def interrupted() -> bool:
            return statements_interrupted() > before

        await _until(interrupted, "the statement was interrupted")
        go.set()
        with pytest.raises(asyncio.CancelledError):
            await count
        assert steps_after_go[0] <= 1 < whole  # it stopped where it stood; it did not run on
        armed.clear()

        # Its connection went back to the pool intact and answers the next question.
        assert store.engine.sync_engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        assert await queue_sql.recount_by_status(store, MOON) == expected
    finally:
        go.set()
        event.remove(store.engine.sync_engine.pool, "checkout", _watch)
        await store.close()


async def test_a_cancelled_postgresql_count_stops_on_the_server(pg_url: str) -> None:
    store = await Store.open(pg_url)
    try:
        async with store.write_engine.begin() as conn:
            await conn.execute(insert(TaskRow), _rows(2000))
        expected = await queue_sql.recount_by_status(store, MOON)
        async with store.engine.connect() as watcher, store.engine.connect() as holder:

            async def waiting_on_the_lock() -> int:
                found = await watcher.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                    )
                )
                await watcher.commit()
                return int(found.scalar_one())

            await holder.execute(text("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE"))
            before = statements_interrupted()
            count = asyncio.ensure_future(queue_sql.recount_by_status(store, MOON))

            async def blocked() -> bool:
                return await waiting_on_the_lock() == 1

            await _until(blocked, "the count waits for the table lock")
            count.cancel()

            async def gone() -> bool:
                return await waiting_on_the_lock() == 0

            # Still holding the lock: only a cancelled statement can stop waiting for it.
            await _until(gone, "the server cancelled the count")
            with pytest.raises(asyncio.CancelledError):
                await count
            assert statements_interrupted() == before + 1
            await holder.rollback()
        assert store.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        assert await queue_sql.recount_by_status(store, MOON) == expected
    finally:
        await store.close()
