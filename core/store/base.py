"""What every repository shares: the engines, the session helpers and the SQLite write lock.

Concurrency model: every unit of work opens its own ``AsyncSession`` (one session must never be
shared by concurrent tasks). On SQLite, writes additionally pass through one narrow
``asyncio.Lock`` held only for the duration of the write transaction, and transactions start with
``BEGIN IMMEDIATE`` so two processes never deadlock upgrading a read lock.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Connection, Engine, Select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from core.domain.content import DEFAULT_POLICY, ContentPolicy
from core.errors import DatabaseUnreachable, StoreError
from core.store import engine as engines
from core.store.reachability import is_connection_lost

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")


def new_id() -> str:
    return uuid.uuid4().hex


class StoreBase:
    """The state behind every repository mixin of ``Store``; not used on its own."""

    def __init__(
        self,
        engine: AsyncEngine,
        url: str,
        write_engine: AsyncEngine | None = None,
        *,
        busy_timeout: float = engines.DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        self.engine = engine
        self.write_engine = write_engine or engine
        self.url = url
        self.is_sqlite = engine.dialect.name == "sqlite"
        self.busy_timeout = busy_timeout
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._write_sessions = async_sessionmaker(self.write_engine, expire_on_commit=False)
        self._write_lock = asyncio.Lock()
        # SQLite: a plain engine reading in one worker-thread hop (set by the event log).
        self._read_thread_engine: Engine | None = None
        self._task_search = False  # the SQLite trigram index of task text exists (set by open)
        # Texts above its inline limit are stored as chunks (core.store.chunks); tests shrink it.
        self.content_policy: ContentPolicy = DEFAULT_POLICY
        # sha256 -> text held by a running attempt (``ChunkRepository.sharing``): whole reads of
        # that content return the held string instead of a new copy.
        self._shared_texts: dict[str, str] = {}
        self._shared_holds: dict[str, int] = {}

    @property
    def display_name(self) -> str:
        return engines.display_name(self.url)

    @property
    def has_task_search(self) -> bool:
        """The SQLite trigram index of task text exists and works (the queue filter asks from it)."""
        return self._task_search

    def read_session(self) -> AbstractAsyncContextManager[AsyncSession]:
        """A read-only unit of work for the store's query modules (``queue_sql``)."""
        return self._read()

    async def _insert(self, row: Any, record: type[R]) -> R:
        """Add one new row in its own write transaction and return it as its record type."""
        async with self._write() as s:
            s.add(row)
        return record.model_validate(row)

    async def _get(self, record: type[R], row_type: type[Any], key: str, what: str) -> R:
        """One row by primary key, or ``StoreError`` naming what was looked for."""
        async with self._read() as s:
            row = await s.get(row_type, key)
            if row is None:
                raise StoreError(f"no {what} with id {key!r}")
            return record.model_validate(row)

    async def _select(self, record: type[R], query: Select[Any]) -> list[R]:
        async with self._read() as s:
            return [record.model_validate(r) for r in (await s.scalars(query)).all()]

    async def read_sync(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` (Core statements) in one read transaction: one snapshot for all of them.

        On SQLite the whole read is one hop to a worker thread, where the statements wait on the
        database with the GIL released; through the async driver each statement, fetch and the
        closing rollback was a hop of its own, and the ORM's unit of work ran on the event loop.
        Elsewhere it runs on an async connection (``run_sync``). ``work`` must only read rows:
        turn them into records on the caller's side.
        """
        engine = self._read_thread_engine
        with self._database_errors():
            if engine is None:
                async with self.engine.connect() as conn:
                    return await conn.run_sync(work)
            return await asyncio.to_thread(_read_in_thread, engine, work)

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncSession]:
        with self._database_errors():
            async with self._sessions() as session:
                yield session

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncSession]:
        """One write transaction; on SQLite serialised by the narrow in-process lock."""
        with self._database_errors():
            if self.is_sqlite:
                async with self._write_lock, self._write_sessions() as session, session.begin():
                    yield session
            else:
                async with self._write_sessions() as session, session.begin():
                    yield session

    @asynccontextmanager
    async def _write_conn(self) -> AsyncIterator[AsyncConnection]:
        """A Core-level write transaction, for statements that need no ORM objects."""
        with self._database_errors():
            if self.is_sqlite:
                async with self._write_lock, self.write_engine.begin() as conn:
                    yield conn
            else:
                async with self.write_engine.begin() as conn:
                    yield conn

    @contextmanager
    def _database_errors(self) -> Iterator[None]:
        """A damaged, read-only or unreachable database becomes one ``StoreError`` line.

        SQLAlchemy's own message carries the statement and its bound parameters (task text, say),
        which must never reach a person's terminal. Constraint violations and a busy database
        pass through unchanged: callers handle those (the event log retries a busy write).
        """
        try:
            yield
        except Exception as exc:
            if not isinstance(exc, DatabaseUnreachable) and is_connection_lost(
                exc
            ):  # the server went away: a worker waits for it, nothing failed
                raise DatabaseUnreachable(engines.describe_db_error(exc, self.url)) from None
            if not isinstance(exc, DBAPIError) or not engines.is_environmental(exc):
                raise
            raise StoreError(engines.describe_db_error(exc, self.url)) from None


def _read_in_thread(engine: Engine, work: Callable[[Connection], T]) -> T:
    """``work`` inside one deferred transaction (the read engine's connections autocommit)."""
    with engine.connect() as conn:
        conn.exec_driver_sql("BEGIN")
        try:
            return work(conn)
        finally:
            conn.exec_driver_sql("ROLLBACK")
