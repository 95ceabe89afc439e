"""Reads that stop in the database when their caller is cancelled.

A keystroke in the queue's filter makes the previous keystroke's reload worthless, and the desk
cancels it. Cancelling the asyncio task alone only stops *waiting*: the statement keeps running in
aiosqlite's thread (or on the PostgreSQL server) to its end, holding its connection and a core of
a two-core laptop, and the next keystroke's reload queues behind it. Here the statement itself is
stopped: ``sqlite3.Connection.interrupt()`` (SQLite's documented cross-thread call) or
``pg_cancel_backend`` from a second connection. The work then fails with the driver's ordinary
"interrupted"/"canceling statement" error, so SQLAlchemy rolls back and returns the connection to
the pool intact, instead of dropping it as it does when a cancellation lands inside a statement.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from core.store.base import StoreBase

T = TypeVar("T")

__all__ = ["interruptible_read", "statements_interrupted"]

_interrupted = 0


def statements_interrupted() -> int:
    """How many statements this process has stopped in the database (tests and benchmarks)."""
    return _interrupted


async def interruptible_read(store: StoreBase, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run ``work`` in a read session; cancelling the caller stops its statement in the database.

    ``work`` runs as its own task, shielded, so a cancellation reaches this function first: it
    stops the statement, waits for ``work`` to finish failing (its session rolls back and lets go
    of the connection), then lets the cancellation through.
    """
    async with store.read_session() as session:
        stop = await _stopper(store, session)
        inner = asyncio.ensure_future(work(session))
        try:
            return await asyncio.shield(inner)
        except asyncio.CancelledError:
            global _interrupted
            if not inner.done():
                await stop()
                _interrupted += 1
                await asyncio.wait([inner])
            if not inner.cancelled():
                inner.exception()  # retrieved: the interruption is the expected outcome
            raise


async def _stopper(store: StoreBase, session: AsyncSession) -> Callable[[], Awaitable[None]]:
    """How to stop whatever statement ``session``'s connection is running now."""
    conn = await session.connection()
    raw: Any = (await conn.get_raw_connection()).driver_connection
    if store.is_sqlite:
        sqlite_conn = raw._conn  # aiosqlite's sqlite3.Connection; interrupt() is thread-safe

        async def interrupt() -> None:
            with contextlib.suppress(Exception):  # already closed: nothing runs to stop
                sqlite_conn.interrupt()

        return interrupt
    pid = raw.get_server_pid() if hasattr(raw, "get_server_pid") else None

    async def cancel() -> None:
        if pid is None:
            return
        with contextlib.suppress(Exception):  # the server may be gone: the statement went with it
            async with store.engine.connect() as other:
                await other.execute(text("SELECT pg_cancel_backend(:pid)"), {"pid": pid})

    return cancel
