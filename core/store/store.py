"""The workspace store: async SQLAlchemy over SQLite (default) or PostgreSQL.

Concurrency model: every unit of work opens its own ``AsyncSession`` (one session must never be
shared by concurrent tasks). On SQLite, writes additionally pass through one narrow
``asyncio.Lock`` held only for the duration of the write transaction, and transactions start with
``BEGIN IMMEDIATE`` so two processes never deadlock upgrading a read lock. Event sequence numbers
come from a counter row bumped in the same transaction as the insert, so ``seq`` is contiguous
per session whatever the number of writers.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import event, func, insert, select, text, update
from sqlalchemy import text as sql_text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from core.domain.records import (
    AttemptRecord,
    EventRecord,
    FeedbackRecord,
    RunRecord,
    SessionRecord,
    TaskRecord,
    ValidationRecord,
)
from core.domain.status import TaskStatus
from core.errors import StoreError, VersionConflict
from core.store.models import (
    AttemptRow,
    EventRow,
    FeedbackRow,
    RunRow,
    SessionRow,
    TaskRow,
    ValidationRow,
    utcnow,
)

SQLITE_HEADER = b"SQLite format 3\x00"


class NewEvent(BaseModel):
    """An event not yet stored; the store assigns id, seq and time."""

    kind: str
    payload: dict[str, Any]
    content: str | None = None


MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# The newest migration's revision; a test keeps it equal to alembic's head.
SCHEMA_HEAD = "0002"


def new_id() -> str:
    return uuid.uuid4().hex


def normalise_url(url: str) -> str:
    """Accept plain paths and sync driver names; the store always runs on async drivers."""
    if "://" not in url:
        return f"sqlite+aiosqlite:///{Path(url).expanduser().resolve()}"
    if url.startswith(("sqlite://", "sqlite+pysqlite://")):
        return "sqlite+aiosqlite://" + url.split("://", 1)[1]
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg2://")):
        return "postgresql+asyncpg://" + url.split("://", 1)[1]
    return url


def sqlite_path(url: str) -> Path | None:
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def _check_sqlite_file(path: Path) -> None:
    """Refuse anything that is not an SQLite file before SQLAlchemy can touch (or create) it."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a workspace database")
    if not path.exists():
        return
    try:
        with path.open("rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"cannot read workspace database {path}: {exc.strerror or exc}") from None
    if header and header != SQLITE_HEADER:
        raise StoreError(
            f"{path} is not an Evidence Desk workspace (not an SQLite database); nothing was changed"
        )


class Store:
    """Repository API over the workspace database. Create with ``await Store.open(url)``."""

    def __init__(self, engine: AsyncEngine, url: str, write_engine: AsyncEngine | None = None) -> None:
        self.engine = engine
        self.write_engine = write_engine or engine
        self.url = url
        self.is_sqlite = engine.dialect.name == "sqlite"
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._write_sessions = async_sessionmaker(self.write_engine, expire_on_commit=False)
        self._write_lock = asyncio.Lock()
        self._task_search = False  # the SQLite trigram index of task text exists (set by open)
        self._queue: list[tuple[str, list[NewEvent], str | None, str | None]] = []
        self._writer: asyncio.Task[None] | None = None
        self._session_errors: dict[str, Exception] = {}
        # The write-behind fast path for SQLite: a plain sqlite3 connection used from a worker
        # thread, with SQLAlchemy's own bind processors so stored values are identical.
        self._raw_path = sqlite_path(url) if self.is_sqlite else None
        self._raw: sqlite3.Connection | None = None
        dialect = engine.dialect
        json_bind = EventRow.__table__.c.payload.type.dialect_impl(dialect).bind_processor(dialect)
        time_bind = EventRow.__table__.c.created_at.type.dialect_impl(dialect).bind_processor(dialect)
        self._bind_json: Callable[[Any], Any] = json_bind or (lambda v: v)
        self._bind_datetime: Callable[[Any], Any] = time_bind or (lambda v: v)

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    async def open(cls, url: str, *, migrate: bool = True) -> Store:
        url = normalise_url(url)
        path = sqlite_path(url)
        if path is not None:
            _check_sqlite_file(path)
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            engine = _make_engine(url, immediate=False)
            write_engine = _make_engine(url, immediate=True) if path is not None else None
        except (ArgumentError, ImportError) as exc:
            raise StoreError(f"cannot open workspace {_safe_url(url)}: {exc}") from None
        store = cls(engine, url, write_engine)
        try:
            await store._check_and_migrate(migrate)
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        try:
            await self.flush()
        finally:
            if self._raw is not None:
                self._raw.close()
                self._raw = None
            await self.engine.dispose()
        if self.write_engine is not self.engine:
            await self.write_engine.dispose()

    async def _check_and_migrate(self, migrate: bool) -> None:
        await self._migrate(migrate)
        if self.is_sqlite:
            async with self.engine.connect() as conn:
                found = await conn.execute(
                    sql_text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tasks_fts'")
                )
                self._task_search = found.first() is not None
                if self._task_search:
                    try:  # the index's triggers run on every task write: this SQLite must have trigram
                        await conn.execute(
                            sql_text("SELECT 1 FROM tasks_fts WHERE tasks_fts MATCH 'abc' LIMIT 1")
                        )
                    except DatabaseError as exc:
                        raise StoreError(
                            f"workspace {self.display_name} has a task search index this SQLite "
                            f"({sqlite3.sqlite_version}) cannot use ({_db_message(exc)}); open it with "
                            "SQLite 3.34 or newer"
                        ) from None

    async def _migrate(self, migrate: bool) -> None:
        if await self._at_head():
            return  # the common case: no alembic import (about 0.45 s) on the desk's start-up path
        from alembic.config import Config
        from alembic.script import ScriptDirectory

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        script = ScriptDirectory.from_config(cfg)
        known = {rev.revision for rev in script.walk_revisions()}
        head = script.get_current_head()
        try:
            async with self.engine.connect() as conn:
                current = await conn.run_sync(_current_revision)
                if current is not None and current not in known:
                    raise StoreError(
                        f"workspace {self.display_name} was written by a newer Evidence Desk "
                        f"(schema {current}, this version knows up to {head}); nothing was changed"
                    )
                if current == head:
                    return
                if current is None and await conn.run_sync(_has_foreign_tables):
                    raise StoreError(
                        f"{self.display_name} is a database but not an Evidence Desk workspace; nothing was changed"
                    )
            if not migrate:
                raise StoreError(f"workspace {self.display_name} needs a schema upgrade to {head}")
            async with self._write_lock, self.write_engine.begin() as conn:
                await conn.run_sync(_upgrade, cfg)
            if self.is_sqlite:
                # WAL is a property of the file: set it once the file is known to be ours, never
                # on a database we are about to refuse.
                async with self.write_engine.connect() as conn:
                    await conn.exec_driver_sql("COMMIT")  # leave the listener's BEGIN
                    await conn.exec_driver_sql("PRAGMA journal_mode=WAL")
        except DatabaseError as exc:
            raise StoreError(f"cannot use workspace {self.display_name}: {_db_message(exc)}") from None
        except OSError as exc:
            raise StoreError(f"cannot open workspace {self.display_name}: {exc}") from None

    async def _at_head(self) -> bool:
        try:
            async with self.engine.connect() as conn:
                current = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        except (DatabaseError, OSError):
            return False  # no version table, not a database, or unreachable: the full check explains
        return current == SCHEMA_HEAD

    @property
    def display_name(self) -> str:
        path = sqlite_path(self.url)
        return str(path) if path else make_url(self.url).render_as_string(hide_password=True)

    # ------------------------------------------------------------------ sessions
    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncSession]:
        async with self._sessions() as session:
            yield session

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncSession]:
        """One write transaction; on SQLite serialised by the narrow in-process lock."""
        if self.is_sqlite:
            async with self._write_lock, self._write_sessions() as session, session.begin():
                yield session
        else:
            async with self._write_sessions() as session, session.begin():
                yield session

    # ------------------------------------------------------------------ tasks
    async def create_task(
        self,
        text: str,
        *,
        title: str | None = None,
        team_spec: str | None = None,
        output_schema: dict[str, Any] | None = None,
        read_only: bool = False,
        origin: str | None = None,
        task_id: str | None = None,
    ) -> TaskRecord:
        if not text.strip():
            raise ValueError("a task needs some text")
        now = utcnow()
        row = TaskRow(
            id=task_id or new_id(),
            title=(title or _title_from(text))[:300],
            text=text,
            status=TaskStatus.OPEN.value,
            team_spec=team_spec,
            output_schema=output_schema,
            attempt_count=0,
            read_only=read_only,
            origin=origin,
            version=1,
            created_at=now,
            updated_at=now,
        )
        # The main session is created in the same transaction: a task never exists without the
        # session its status events and transcript go to, even if the process dies right here.
        session = SessionRow(
            id=new_id(), task_id=row.id, kind="main", label="main", next_seq=1, created_at=now
        )
        row.main_session_id = session.id
        async with self._write() as s:
            s.add(row)
            await s.flush()
            s.add(session)
        return TaskRecord.model_validate(row)

    async def get_task(self, task_id: str) -> TaskRecord:
        async with self._read() as s:
            row = await s.get(TaskRow, task_id)
            if row is None:
                row = await self._by_prefix(s, task_id)
            return TaskRecord.model_validate(row)

    async def _by_prefix(self, s: AsyncSession, prefix: str) -> TaskRow:
        """Analysts type short ids; accept a unique prefix of at least 6 characters."""
        if len(prefix) >= 6:
            rows = (await s.scalars(select(TaskRow).where(TaskRow.id.startswith(prefix)).limit(2))).all()
            if len(rows) == 1:
                return rows[0]
            if len(rows) > 1:
                raise StoreError(f"task id prefix {prefix!r} is ambiguous")
        raise StoreError(f"no task with id {prefix!r}")

    SORTABLE = (
        "updated_at",
        "created_at",
        "title",
        "latest_score",
        "latest_category",
        "attempt_count",
        "status",
        "validation_outcome",
    )

    def _task_filter(
        self,
        q: Any,
        statuses: Sequence[TaskStatus] | None,
        text: str | None,
        outcomes: Sequence[str | None] | None,
    ) -> Any:
        if statuses:
            q = q.where(TaskRow.status.in_([s.value for s in statuses]))
        if text:
            if self.is_sqlite and self._task_search and len(text) >= 3:
                # The trigram index (migration 0002) answers the same substring question without
                # scanning every task; a phrase query matches the text exactly as typed.
                phrase = '"' + text.replace('"', '""') + '"'
                q = q.where(
                    sql_text(
                        "tasks.id IN (SELECT task_id FROM tasks_fts WHERE tasks_fts MATCH :task_search)"
                    ).bindparams(task_search=phrase)
                )
            elif self.is_sqlite:
                # SQLite's LIKE already ignores ASCII case; icontains would wrap both columns in
                # lower() and cost the desk's filter ~40% more per keystroke on 100k tasks.
                pattern = "%" + _like_escape(text) + "%"
                q = q.where(
                    TaskRow.title.like(pattern, escape="\\") | TaskRow.text.like(pattern, escape="\\")
                )
            else:
                q = q.where(
                    TaskRow.title.icontains(text, autoescape=True)
                    | TaskRow.text.icontains(text, autoescape=True)
                )
        if outcomes:
            named = [o for o in outcomes if o is not None]
            cond: Any = TaskRow.validation_outcome.in_(named)
            if None in outcomes:
                cond = cond | TaskRow.validation_outcome.is_(None)
            q = q.where(cond)
        return q

    async def list_tasks(
        self,
        *,
        statuses: Sequence[TaskStatus] | None = None,
        text: str | None = None,
        outcomes: Sequence[str | None] | None = None,
        limit: int | None = None,
        offset: int = 0,
        order_by: str = "updated_at",
        descending: bool = True,
    ) -> list[TaskRecord]:
        """One page of tasks; the desk's queue pages through each status group with this."""
        if order_by not in self.SORTABLE:
            raise ValueError(f"cannot sort tasks by {order_by!r}")
        column = getattr(TaskRow, order_by)
        q = self._task_filter(select(TaskRow), statuses, text, outcomes)
        q = q.order_by(column.desc() if descending else column.asc(), TaskRow.id).offset(offset)
        if limit is not None:
            q = q.limit(limit)
        async with self._read() as s:
            return [TaskRecord.model_validate(r) for r in (await s.scalars(q)).all()]

    async def count_tasks_by_status(
        self, *, text: str | None = None, outcomes: Sequence[str | None] | None = None
    ) -> dict[TaskStatus, int]:
        q = self._task_filter(select(TaskRow.status, func.count()), None, text, outcomes).group_by(
            TaskRow.status
        )
        async with self._read() as s:
            rows = (await s.execute(q)).all()
        counts = dict.fromkeys(TaskStatus, 0)
        for status, n in rows:
            counts[TaskStatus(status)] = int(n)
        return counts

    async def update_task(
        self,
        task_id: str,
        *,
        expected_version: int | None = None,
        event: tuple[str, NewEvent] | None = None,
        feedback: dict[str, Any] | None = None,
        **fields: Any,
    ) -> TaskRecord:
        """Compare-and-set on ``version``: a stale version changes nothing and raises ``VersionConflict``.

        ``event`` (session id, event) is appended in the same transaction, so a status change and
        the event that explains it are never separated by a crash.
        """
        await self.flush()
        values = {k: (v.value if hasattr(v, "value") else v) for k, v in fields.items()}
        values["updated_at"] = utcnow()
        values["version"] = TaskRow.version + 1
        stmt = update(TaskRow).where(TaskRow.id == task_id)
        if expected_version is not None:
            stmt = stmt.where(TaskRow.version == expected_version)
        async with self._write() as s:
            result = await s.execute(stmt.values(**values).execution_options(synchronize_session=False))
            if result.rowcount != 1:  # type: ignore[attr-defined]
                current = await s.get(TaskRow, task_id)
                if current is None:
                    raise StoreError(f"no task with id {task_id!r}")
                raise VersionConflict(
                    f"task {task_id[:8]} changed since it was read (version {expected_version}, "
                    f"now {current.version}, status {current.status}); reload and try again"
                )
            if event is not None:
                session_id, new_event = event
                await self._insert_events(await s.connection(), session_id, [new_event], None, task_id)
            if feedback is not None:  # the analyst's decision and its record commit together
                s.add(FeedbackRow(id=new_id(), task_id=task_id, **feedback))
        return await self.get_task(task_id)

    async def touch_heartbeat(self, task_id: str) -> None:
        """Say the runner is alive without bumping ``version`` (analysts' views stay current)."""
        async with self._write() as s:
            await s.execute(update(TaskRow).where(TaskRow.id == task_id).values(heartbeat_at=utcnow()))

    # ------------------------------------------------------------------ attempts
    async def create_attempt(self, task_id: str, index: int, *, trigger: str, prompt: str) -> AttemptRecord:
        row = AttemptRow(
            id=new_id(), task_id=task_id, index=index, trigger=trigger, prompt=prompt, state="running"
        )
        row.started_at = utcnow()
        async with self._write() as s:
            s.add(row)
        return AttemptRecord.model_validate(row)

    async def update_attempt(self, attempt_id: str, **fields: Any) -> AttemptRecord:
        values = {k: (v.value if hasattr(v, "value") else v) for k, v in fields.items()}
        async with self._write() as s:
            await s.execute(update(AttemptRow).where(AttemptRow.id == attempt_id).values(**values))
        async with self._read() as s:
            row = await s.get(AttemptRow, attempt_id)
            if row is None:
                raise StoreError(f"no attempt with id {attempt_id!r}")
            return AttemptRecord.model_validate(row)

    async def get_attempt(self, attempt_id: str) -> AttemptRecord:
        async with self._read() as s:
            row = await s.get(AttemptRow, attempt_id)
            if row is None:
                raise StoreError(f"no attempt with id {attempt_id!r}")
            return AttemptRecord.model_validate(row)

    async def list_attempts(self, task_id: str) -> list[AttemptRecord]:
        async with self._read() as s:
            rows = await s.scalars(
                select(AttemptRow).where(AttemptRow.task_id == task_id).order_by(AttemptRow.index)
            )
            return [AttemptRecord.model_validate(r) for r in rows.all()]

    # ------------------------------------------------------------------ sessions and runs
    async def create_session(
        self, *, task_id: str | None, kind: str, label: str = "", parent_session_id: str | None = None
    ) -> SessionRecord:
        row = SessionRow(
            id=new_id(),
            task_id=task_id,
            kind=kind,
            label=label,
            parent_session_id=parent_session_id,
            next_seq=1,
        )
        row.created_at = utcnow()
        async with self._write() as s:
            s.add(row)
        return SessionRecord.model_validate(row)

    async def list_sessions(self, task_id: str) -> list[SessionRecord]:
        async with self._read() as s:
            rows = await s.scalars(
                select(SessionRow).where(SessionRow.task_id == task_id).order_by(SessionRow.created_at)
            )
            return [SessionRecord.model_validate(r) for r in rows.all()]

    async def create_run(
        self,
        *,
        session_id: str,
        kind: str,
        model: str,
        task_id: str | None = None,
        attempt_id: str | None = None,
        node_id: str | None = None,
    ) -> RunRecord:
        row = RunRow(
            id=new_id(),
            session_id=session_id,
            kind=kind,
            model=model,
            task_id=task_id,
            attempt_id=attempt_id,
            node_id=node_id,
            state="running",
        )
        row.started_at = utcnow()
        async with self._write() as s:
            s.add(row)
        return RunRecord.model_validate(row)

    async def finish_run(self, run_id: str, *, finish_reason: str, output_text: str) -> None:
        async with self._write() as s:
            await s.execute(
                update(RunRow)
                .where(RunRow.id == run_id)
                .values(
                    state="finished",
                    finish_reason=finish_reason,
                    output_text=output_text,
                    finished_at=utcnow(),
                )
            )

    async def get_run(self, run_id: str) -> RunRecord:
        async with self._read() as s:
            row = await s.get(RunRow, run_id)
            if row is None:
                raise StoreError(f"no run with id {run_id!r}")
            return RunRecord.model_validate(row)

    async def list_runs(
        self, *, task_id: str | None = None, attempt_id: str | None = None
    ) -> list[RunRecord]:
        q = select(RunRow)
        if task_id is not None:
            q = q.where(RunRow.task_id == task_id)
        if attempt_id is not None:
            q = q.where(RunRow.attempt_id == attempt_id)
        async with self._read() as s:
            return [
                RunRecord.model_validate(r) for r in (await s.scalars(q.order_by(RunRow.started_at))).all()
            ]

    # ------------------------------------------------------------------ events
    async def append_event(
        self,
        session_id: str,
        kind: str,
        payload: dict[str, Any],
        *,
        content: str | None = None,
        run_id: str | None = None,
        task_id: str | None = None,
    ) -> EventRecord:
        """Append one event; ``seq`` is allocated in the same transaction, so it is never reused."""
        (record,) = await self.append_events(
            session_id,
            [NewEvent(kind=kind, payload=payload, content=content)],
            run_id=run_id,
            task_id=task_id,
        )
        return record

    async def append_events(
        self,
        session_id: str,
        events: Sequence[NewEvent],
        *,
        run_id: str | None = None,
        task_id: str | None = None,
    ) -> list[EventRecord]:
        """Append several events of one session atomically, with contiguous ``seq`` numbers.

        Anything queued with ``enqueue_events`` is written first, so the log keeps the order in
        which a coroutine produced its events.
        """
        await self.flush(session_id)
        if not events:
            return []
        async with self._write_conn() as conn:
            return await self._insert_events(conn, session_id, events, run_id, task_id)

    def enqueue_events(
        self,
        session_id: str,
        events: Sequence[NewEvent],
        *,
        run_id: str | None = None,
        task_id: str | None = None,
    ) -> None:
        """Write-behind append for the agent loop's hot path.

        The events are committed by one background writer that coalesces everything queued into
        a single transaction, so a turn does not wait for its log writes. ``flush()`` (called by
        every read of the log and by ``append_events``) waits until they are durable. A process
        killed between enqueue and commit loses at most the last few milliseconds of events; the
        run then has no ``run_finished`` and crash recovery marks it interrupted.
        """
        if session_id in self._session_errors:
            error = self._session_errors.pop(session_id)
            raise StoreError(f"events of session {session_id[:8]} could not be written: {error}")
        if not events:
            return
        self._queue.append((session_id, list(events), run_id, task_id))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._drain_queue())

    async def _drain_queue(self) -> None:
        """Commit queued events; a busy database is retried, a bad item never sinks the others."""
        busy_retries = 0
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                await self._write_batch(batch)
                busy_retries = 0
            except Exception as exc:
                if _is_busy(exc) and busy_retries < 6:
                    busy_retries += 1
                    self._queue[:0] = batch  # keep order: the failed batch goes first again
                    await asyncio.sleep(0.05 * 2**busy_retries)
                    continue
                # Write item by item so one failing session cannot lose another session's events.
                for item in batch:
                    if item[0] in self._session_errors:
                        continue  # never write past a hole: later events of a failed session wait
                    try:
                        await self._write_batch([item])
                    except Exception as item_exc:
                        self._session_errors.setdefault(item[0], item_exc)

    async def _write_batch(self, batch: list[tuple[str, list[NewEvent], str | None, str | None]]) -> None:
        if self._raw_path is not None:
            # SQLite: the whole batch is written by a worker thread on a plain sqlite3
            # connection, so the event loop (and the desk painting on it) does none of it.
            async with self._write_lock:
                await asyncio.to_thread(self._write_batch_sqlite, batch)
        else:
            async with self._write_conn() as conn:
                for session_id, events, run_id, task_id in batch:
                    await self._insert_events(conn, session_id, events, run_id, task_id)

    def _write_batch_sqlite(self, batch: list[tuple[str, list[NewEvent], str | None, str | None]]) -> None:
        """Runs in a worker thread, under ``_write_lock``; same SQL the ORM path would emit."""
        if self._raw is None:
            assert self._raw_path is not None
            self._raw = sqlite3.connect(
                self._raw_path, timeout=30, isolation_level=None, check_same_thread=False
            )
            self._raw.execute("PRAGMA foreign_keys=ON")
            self._raw.execute("PRAGMA busy_timeout=30000")
        conn = self._raw
        created = self._bind_datetime(utcnow())
        conn.execute("BEGIN IMMEDIATE")
        try:
            for session_id, events, run_id, task_id in batch:
                row = conn.execute(
                    "UPDATE sessions SET next_seq = next_seq + ? WHERE id = ? RETURNING next_seq - ?",
                    (len(events), session_id, len(events)),
                ).fetchone()
                if row is None:
                    raise StoreError(f"no session with id {session_id!r}")
                first = int(row[0])
                conn.executemany(
                    "INSERT INTO events (session_id, run_id, task_id, seq, kind, payload, content, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            session_id,
                            run_id,
                            task_id,
                            first + i,
                            ev.kind,
                            self._bind_json(ev.payload),
                            ev.content,
                            created,
                        )
                        for i, ev in enumerate(events)
                    ],
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may already have rolled back (disk full, I/O error)
                conn.execute("ROLLBACK")
            raise

    async def flush(self, session_id: str | None = None) -> None:
        """Wait until every queued event is committed.

        With ``session_id``, raise if that session's queued events could not be written: the run
        that owns the session learns it lost evidence, and no other caller is blamed for it.
        """
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)
        if session_id is not None and session_id in self._session_errors:
            error = self._session_errors.pop(session_id)
            raise StoreError(f"events of session {session_id[:8]} could not be written: {error}")

    async def _insert_events(
        self,
        conn: AsyncConnection,
        session_id: str,
        events: Sequence[NewEvent],
        run_id: str | None,
        task_id: str | None,
    ) -> list[EventRecord]:
        # Core statements, not the ORM: this is the hot write path of every run.
        now = utcnow()
        first = await conn.scalar(
            update(SessionRow)
            .where(SessionRow.id == session_id)
            .values(next_seq=SessionRow.next_seq + len(events))
            .returning(SessionRow.next_seq - len(events))
        )
        if first is None:
            raise StoreError(f"no session with id {session_id!r}")
        rows = [
            {
                "session_id": session_id,
                "run_id": run_id,
                "task_id": task_id,
                "seq": int(first) + i,
                "kind": ev.kind,
                "payload": ev.payload,
                "content": ev.content,
                "created_at": now,
            }
            for i, ev in enumerate(events)
        ]
        ids = (await conn.execute(insert(EventRow).returning(EventRow.id), rows)).scalars().all()
        return [EventRecord(id=int(i), **row) for i, row in zip(ids, rows, strict=True)]

    @asynccontextmanager
    async def _write_conn(self) -> AsyncIterator[AsyncConnection]:
        if self.is_sqlite:
            async with self._write_lock, self.write_engine.begin() as conn:
                yield conn
        else:
            async with self.write_engine.begin() as conn:
                yield conn

    async def get_run_event_records(self, session_id: str, run_id: str) -> list[EventRecord]:
        q = (
            select(EventRow)
            .where(EventRow.session_id == session_id, EventRow.run_id == run_id)
            .order_by(EventRow.seq)
        )
        await self.flush()
        async with self._read() as s:
            return [EventRecord.model_validate(r) for r in (await s.scalars(q)).all()]

    async def get_session_events(
        self, session_id: str, *, kinds: Sequence[str] | None = None
    ) -> list[EventRecord]:
        q = select(EventRow).where(EventRow.session_id == session_id)
        if kinds:
            q = q.where(EventRow.kind.in_(list(kinds)))
        await self.flush()
        async with self._read() as s:
            return [EventRecord.model_validate(r) for r in (await s.scalars(q.order_by(EventRow.seq))).all()]

    async def get_task_events(self, task_id: str, *, kinds: Sequence[str] | None = None) -> list[EventRecord]:
        q = select(EventRow).where(EventRow.task_id == task_id)
        if kinds:
            q = q.where(EventRow.kind.in_(list(kinds)))
        await self.flush()
        async with self._read() as s:
            return [EventRecord.model_validate(r) for r in (await s.scalars(q.order_by(EventRow.id))).all()]

    # ------------------------------------------------------------------ validations and feedback
    async def add_validation(
        self,
        *,
        task_id: str,
        attempt_id: str,
        attempt_index: int,
        result: dict[str, Any],
        raw_response: str,
        prompt: str | None,
        debug: dict[str, Any],
    ) -> ValidationRecord:
        row = ValidationRow(
            id=new_id(),
            task_id=task_id,
            attempt_id=attempt_id,
            attempt_index=attempt_index,
            status=str(result["status"]),
            score=float(result.get("score", 0.0)),
            category=str(result.get("category", "none")),
            result=result,
            raw_response=raw_response,
            prompt=prompt,
            debug=debug,
        )
        row.created_at = utcnow()
        async with self._write() as s:
            s.add(row)
        return ValidationRecord.model_validate(row)

    async def list_validations(self, task_id: str) -> list[ValidationRecord]:
        q = select(ValidationRow).where(ValidationRow.task_id == task_id).order_by(ValidationRow.created_at)
        async with self._read() as s:
            return [ValidationRecord.model_validate(r) for r in (await s.scalars(q)).all()]

    async def add_feedback(
        self,
        *,
        task_id: str,
        attempt_id: str | None,
        action: str,
        prompt: str | None,
        note: str | None,
        reviewer: str,
        from_status: TaskStatus,
        to_status: TaskStatus,
        created_at: datetime | None = None,
    ) -> FeedbackRecord:
        row = FeedbackRow(
            id=new_id(),
            task_id=task_id,
            attempt_id=attempt_id,
            action=action,
            prompt=prompt,
            note=note,
            reviewer=reviewer,
            from_status=from_status.value,
            to_status=to_status.value,
        )
        row.created_at = created_at or utcnow()
        async with self._write() as s:
            s.add(row)
        return FeedbackRecord.model_validate(row)

    async def list_feedback(self, task_id: str) -> list[FeedbackRecord]:
        q = select(FeedbackRow).where(FeedbackRow.task_id == task_id).order_by(FeedbackRow.created_at)
        async with self._read() as s:
            return [FeedbackRecord.model_validate(r) for r in (await s.scalars(q)).all()]

    # ------------------------------------------------------------------ maintenance
    async def integrity_check(self) -> str:
        if not self.is_sqlite:
            return "ok"
        async with self.engine.connect() as conn:
            return str((await conn.execute(text("PRAGMA integrity_check"))).scalar())

    # ------------------------------------------------------------------ attempt endings
    async def update_task_ending_attempt(
        self,
        task_id: str,
        attempt_id: str,
        attempt_fields: dict[str, Any],
        *,
        expected_version: int | None = None,
        event: tuple[str, NewEvent] | None = None,
        feedback: dict[str, Any] | None = None,
        **fields: Any,
    ) -> TaskRecord:
        """``update_task`` and the end of one of the task's attempts, in one transaction.

        A task's move and its attempt's recorded state and outcome are one fact: written apart, a
        crash between them leaves a delivered task whose attempt still looks running (or the
        reverse), and readers would have to guess. A stale version changes neither.
        """
        await self.flush()
        values = {k: (v.value if hasattr(v, "value") else v) for k, v in fields.items()}
        values["updated_at"] = utcnow()
        values["version"] = TaskRow.version + 1
        ending = {k: (v.value if hasattr(v, "value") else v) for k, v in attempt_fields.items()}
        stmt = update(TaskRow).where(TaskRow.id == task_id)
        if expected_version is not None:
            stmt = stmt.where(TaskRow.version == expected_version)
        async with self._write() as s:
            result = await s.execute(stmt.values(**values).execution_options(synchronize_session=False))
            if result.rowcount != 1:  # type: ignore[attr-defined]
                current = await s.get(TaskRow, task_id)
                if current is None:
                    raise StoreError(f"no task with id {task_id!r}")
                raise VersionConflict(
                    f"task {task_id[:8]} changed since it was read (version {expected_version}, "
                    f"now {current.version}, status {current.status}); reload and try again"
                )
            ended = await s.execute(
                update(AttemptRow)
                .where(AttemptRow.id == attempt_id, AttemptRow.task_id == task_id)
                .values(**ending)
                .execution_options(synchronize_session=False)
            )
            if ended.rowcount != 1:  # type: ignore[attr-defined]
                raise StoreError(f"task {task_id[:8]} has no attempt with id {attempt_id!r}")
            if event is not None:
                session_id, new_event = event
                await self._insert_events(await s.connection(), session_id, [new_event], None, task_id)
            if feedback is not None:
                s.add(FeedbackRow(id=new_id(), task_id=task_id, **feedback))
        return await self.get_task(task_id)


def _safe_url(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(an unparseable database URL)"


def _is_busy(exc: BaseException) -> bool:
    """SQLite's "database is locked/busy": another writer held the file past the busy timeout."""
    message = str(getattr(exc, "orig", exc)).lower()
    return isinstance(exc, (sqlite3.OperationalError, OperationalError)) and (
        "locked" in message or "busy" in message
    )


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _title_from(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 120 else first[:117] + "..."


def _db_message(exc: DatabaseError) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig) if orig is not None else str(exc).splitlines()[0]


def _make_engine(url: str, *, immediate: bool) -> AsyncEngine:
    """SQLite gets two engines: deferred transactions for reads, ``BEGIN IMMEDIATE`` for writes.

    Reads then never take the write lock (WAL lets them run beside a writer), while writers
    claim it up front instead of failing to upgrade a shared lock under contention.
    """
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30})
        sync_engine = engine.sync_engine

        @event.listens_for(sync_engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy emit BEGIN itself (pysqlite's implicit BEGIN is DEFERRED).
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        begin_sql = "BEGIN IMMEDIATE" if immediate else "BEGIN"

        @event.listens_for(sync_engine, "begin")
        def _on_begin(conn: Any) -> None:
            conn.exec_driver_sql(begin_sql)

        return engine
    return create_async_engine(url, pool_pre_ping=True)


def _current_revision(conn: Any) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def _has_foreign_tables(conn: Any) -> bool:
    from sqlalchemy import inspect

    return bool(inspect(conn).get_table_names())


def _upgrade(conn: Any, cfg: Any) -> None:
    from alembic import command

    cfg.attributes["connection"] = conn
    command.upgrade(cfg, "head")


__all__ = ["OperationalError", "Store", "new_id", "normalise_url", "sqlite_path"]
