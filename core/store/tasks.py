"""Tasks: creation with their main session, lookup by id or prefix, compare-and-set updates."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.errors import StoreError, VersionConflict
from core.store.base import new_id
from core.store.eventlog import EventLog, NewEvent, PendingAppend, insert_events
from core.store.models import AttemptRow, FeedbackRow, SessionRow, TaskRow, utcnow
from core.store.search_index import index_feedback

# Shortest id prefix accepted: short enough to type, long enough to rarely be ambiguous.
MIN_PREFIX = 6
_HEX_PREFIX = re.compile(r"[0-9a-f]+")


class TaskRepository(EventLog):
    """Task rows; built on the event log because a status change commits with its event."""

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
        """Analysts type short ids; accept a unique hex prefix of at least 6 characters.

        The prefix is matched as a range of ids, never as a LIKE pattern: ``%`` or ``_`` typed (or
        pasted) by mistake must not select some other task and close or abandon it.
        """
        prefix = prefix.lower()
        if not _HEX_PREFIX.fullmatch(prefix):
            raise StoreError(
                f"no task with id {prefix!r}: not a task id prefix (ids are hexadecimal, 0-9 a-f)"
            )
        if len(prefix) < MIN_PREFIX:
            raise StoreError(f"task id prefix {prefix!r} is too short: type at least {MIN_PREFIX} characters")
        upper = prefix + "g"  # every id starting with ``prefix`` sorts below prefix + "g" (ids are hex)
        found = select(TaskRow).where(TaskRow.id >= prefix, TaskRow.id < upper).limit(2)
        rows = (await s.scalars(found)).all()
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            raise StoreError(f"task id prefix {prefix!r} is ambiguous; type more of the id")
        raise StoreError(f"no task with id {prefix!r}")

    async def update_task(
        self,
        task_id: str,
        *,
        expected_version: int | None = None,
        event: tuple[str, NewEvent] | None = None,
        feedback: dict[str, Any] | None = None,
        ending: tuple[str, dict[str, Any]] | None = None,
        **fields: Any,
    ) -> TaskRecord:
        """Compare-and-set on ``version``: a stale version changes nothing and raises ``VersionConflict``.

        ``event`` (session id, event) is appended in the same transaction, so a status change and
        the event that explains it are never separated by a crash. ``ending`` (attempt id, fields)
        ends one of the task's attempts in that transaction too: a task's move and its attempt's
        recorded state and outcome are one fact, and a crash between them would leave a delivered
        task whose attempt still looks running.
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
            if ending is not None:
                attempt_id, attempt_fields = ending
                ended = await s.execute(
                    update(AttemptRow)
                    .where(AttemptRow.id == attempt_id, AttemptRow.task_id == task_id)
                    .values(**{k: (v.value if hasattr(v, "value") else v) for k, v in attempt_fields.items()})
                    .execution_options(synchronize_session=False)
                )
                if ended.rowcount != 1:  # type: ignore[attr-defined]
                    raise StoreError(f"task {task_id[:8]} has no attempt with id {attempt_id!r}")
            if event is not None:
                session_id, new_event = event
                conn = await s.connection()
                append = PendingAppend(session_id, [new_event], task_id=task_id)
                await conn.run_sync(insert_events, [append], utcnow())
            if feedback is not None:  # the analyst's decision, its record and its search rows commit together
                row = FeedbackRow(id=new_id(), task_id=task_id, **feedback)
                s.add(row)
                await s.flush()
                await index_feedback(
                    await s.connection(),
                    task_id=task_id,
                    attempt_id=row.attempt_id,
                    feedback_id=row.id,
                    note=row.note,
                    prompt=row.prompt,
                    when=row.created_at,
                )
        return await self.get_task(task_id)

    async def touch_heartbeat(self, task_id: str) -> None:
        """Say the runner is alive without bumping ``version`` (analysts' views stay current)."""
        async with self._write() as s:
            await s.execute(update(TaskRow).where(TaskRow.id == task_id).values(heartbeat_at=utcnow()))


def _title_from(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 120 else first[:117] + "..."
