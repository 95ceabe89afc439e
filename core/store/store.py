"""The workspace store: async SQLAlchemy over SQLite (default) or PostgreSQL.

``Store`` is the one object callers hold. It is composed of repository mixins that share the
engines and session helpers of ``StoreBase``: tasks, the queue's task queries, attempts, sessions
and runs, validations and feedback, the event log, and bulk import. Opening and migrating the
database lives in ``core.store.engine``.
"""

from __future__ import annotations

from sqlalchemy.exc import ArgumentError, OperationalError

from core.errors import StoreError
from core.store import engine as engines
from core.store.attempts import AttemptRepository
from core.store.base import new_id
from core.store.bulk import BulkImport, ImportResult, TaskImport
from core.store.chunks import ChunkRepository
from core.store.claims import ClaimRepository
from core.store.engine import MIGRATIONS_DIR, SCHEMA_HEAD, normalise_url, sqlite_path
from core.store.eventlog import NewEvent, new_event
from core.store.recovery_sql import RecoveryRepository
from core.store.reviews import ReviewRepository
from core.store.search_index import SearchIndexRepository
from core.store.sessions import SessionRepository
from core.store.task_queries import TaskQueries
from core.store.tasks import TaskRepository


class Store(
    TaskRepository,
    RecoveryRepository,
    TaskQueries,
    AttemptRepository,
    SessionRepository,
    ReviewRepository,
    BulkImport,
    ClaimRepository,
    ChunkRepository,
    SearchIndexRepository,
):
    """Repository API over the workspace database. Create with ``await Store.open(url)``."""

    @classmethod
    async def open(
        cls, url: str, *, migrate: bool = True, busy_timeout: float = engines.DEFAULT_BUSY_TIMEOUT
    ) -> Store:
        """Open (creating or upgrading if ``migrate``) the workspace at ``url`` or a plain path.

        ``busy_timeout`` is how long, in seconds, an SQLite write waits for another process's
        write lock before the database counts as busy.
        """
        url = normalise_url(url)
        path = sqlite_path(url)
        if path is not None:
            engines.check_sqlite_file(path)
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            engine = engines.make_engine(url, immediate=False, busy_timeout=busy_timeout)
            write_engine = (
                engines.make_engine(url, immediate=True, busy_timeout=busy_timeout)
                if path is not None
                else None
            )
        except (ArgumentError, ImportError) as exc:
            raise StoreError(f"cannot open workspace {engines.safe_url(url)}: {exc}") from None
        store = cls(engine, url, write_engine, busy_timeout=busy_timeout)
        try:
            store._task_search = await engines.prepare(
                store.engine, store.write_engine, store._write_lock, url, migrate=migrate
            )
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        try:
            await self.flush()
        finally:
            self._close_event_writer()
            await self.engine.dispose()
        if self.write_engine is not self.engine:
            await self.write_engine.dispose()

    async def integrity_check(self) -> str:
        return await engines.integrity_check(self.engine)


__all__ = [
    "MIGRATIONS_DIR",
    "SCHEMA_HEAD",
    "ImportResult",
    "NewEvent",
    "OperationalError",
    "Store",
    "TaskImport",
    "new_event",
    "new_id",
    "normalise_url",
    "sqlite_path",
]
