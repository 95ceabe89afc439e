"""Batches: many tasks queued from one file, each row at most once.

A batch is named by its file's content hash and each task by (batch id, row key) under a unique
index, so re-running the same file, even from two machines at once, queues nothing twice: the
database refuses the duplicate, not a check that could race. Rows are written in chunks, each
chunk one transaction with the tasks' main sessions, so a task never exists without its session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.store.base import StoreBase, new_id
from core.store.models import BatchRow, SessionRow, TaskRow, utcnow
from core.store.tasks import _title_from

CHUNK = 200


@dataclass(frozen=True)
class BatchItem:
    """One row of a batch file, already checked."""

    key: str
    text: str
    title: str | None = None
    answer: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass
class BatchResult:
    batch_id: str
    task_ids: list[str] = field(default_factory=list)  # in row order, new or already queued
    created: int = 0
    existing: int = 0
    new_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BatchProgress:
    """How far a batch's tasks have got (the desk's and ``batch --status``'s one count)."""

    batch_id: str
    source: str
    total: int
    by_status: dict[TaskStatus, int]

    @property
    def done(self) -> int:
        return sum(n for s, n in self.by_status.items() if not s.is_execution_active and s not in _QUEUED)


@dataclass(frozen=True)
class SuppliedAnswer:
    """A row's answer to validate only, and its provenance (the batch and the row it came from)."""

    answer: str
    batch_id: str | None
    row_key: str | None


_QUEUED = (TaskStatus.OPEN, TaskStatus.NEEDS_REVISION)


class BatchRepository:
    """Batch rows and their tasks over a ``Store``'s engines (composition: the store stays small)."""

    def __init__(self, store: StoreBase) -> None:
        self.store = store

    async def queue(
        self,
        batch_id: str,
        source: str,
        items: Sequence[BatchItem],
        *,
        team_spec: str | None = None,
        output_schema: dict[str, Any] | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> BatchResult:
        """Insert the rows not yet queued under ``batch_id``; report each row's task id."""
        result = BatchResult(batch_id=batch_id)
        await self._ensure_batch(batch_id, source, len(items))
        for start in range(0, len(items), CHUNK):
            chunk = items[start : start + CHUNK]
            ids = await self._queue_chunk(batch_id, chunk, team_spec, output_schema, result)
            result.task_ids.extend(ids)
            if on_progress is not None:
                on_progress(len(chunk))
        return result

    async def _ensure_batch(self, batch_id: str, source: str, rows: int) -> None:
        async with self.store._write() as s:
            if await s.get(BatchRow, batch_id) is None:
                s.add(BatchRow(id=batch_id, source=source[:500], row_count=rows, created_at=utcnow()))
        # A concurrent first run may have added it meanwhile; the unique id makes that harmless.

    async def _existing(self, batch_id: str, keys: list[str]) -> dict[str, str]:
        async with self.store._read() as s:
            rows = await s.execute(
                select(TaskRow.batch_key, TaskRow.id).where(
                    TaskRow.batch_id == batch_id, TaskRow.batch_key.in_(keys)
                )
            )
            return {str(k): str(i) for k, i in rows.all()}

    async def _queue_chunk(
        self,
        batch_id: str,
        chunk: Sequence[BatchItem],
        team_spec: str | None,
        output_schema: dict[str, Any] | None,
        result: BatchResult,
    ) -> list[str]:
        for _ in range(3):  # a concurrent run of the same file can win a row between read and write
            known = await self._existing(batch_id, [i.key for i in chunk])
            fresh = [i for i in chunk if i.key not in known]
            now = utcnow()
            new_ids: dict[str, str] = {}
            try:
                async with self.store._write() as s:
                    sessions = []
                    for item in fresh:
                        row = _task_row(item, batch_id, team_spec, output_schema, now)
                        new_ids[item.key] = row.id
                        sessions.append(_session_row(row, now))
                        s.add(row)
                    await s.flush()  # the sessions' foreign key needs the tasks first
                    s.add_all(sessions)
            except IntegrityError:
                continue
            result.created += len(fresh)
            result.new_ids.extend(new_ids[i.key] for i in fresh)
            result.existing += len(chunk) - len(fresh)
            return [known.get(i.key) or new_ids[i.key] for i in chunk]
        raise RuntimeError(f"batch {batch_id[:12]}: rows kept colliding with a concurrent run")

    async def progress(self, batch_id: str | None = None) -> list[BatchProgress]:
        async with self.store._read() as s:
            q = select(BatchRow).order_by(BatchRow.created_at)
            if batch_id is not None:
                q = q.where(BatchRow.id == batch_id)
            batches = (await s.scalars(q)).all()
            counts = await s.execute(
                select(TaskRow.batch_id, TaskRow.status, func.count())
                .where(TaskRow.batch_id.is_not(None))
                .group_by(TaskRow.batch_id, TaskRow.status)
            )
            per: dict[str, dict[TaskStatus, int]] = {}
            for bid, status, n in counts.all():
                per.setdefault(str(bid), {})[TaskStatus(status)] = int(n)
        return [
            BatchProgress(
                batch_id=b.id,
                source=b.source,
                total=sum(per.get(b.id, {}).values()),
                by_status=per.get(b.id, {}),
            )
            for b in batches
        ]

    async def supplied_answer(self, task_id: str) -> SuppliedAnswer | None:
        """The answer a batch row gave to validate only, with where it came from; None if none."""
        async with self.store._read() as s:
            row = (
                await s.execute(
                    select(TaskRow.given_answer, TaskRow.batch_id, TaskRow.batch_key).where(
                        TaskRow.id == task_id
                    )
                )
            ).first()
        if row is None or row[0] is None or not str(row[0]).strip():
            return None
        return SuppliedAnswer(answer=str(row[0]), batch_id=row[1], row_key=row[2])

    async def tasks(self, batch_id: str) -> list[TaskRecord]:
        q = select(TaskRow).where(TaskRow.batch_id == batch_id).order_by(TaskRow.created_at, TaskRow.id)
        return await self.store._select(TaskRecord, q)


def _task_row(
    item: BatchItem,
    batch_id: str,
    team_spec: str | None,
    output_schema: dict[str, Any] | None,
    now: Any,
) -> TaskRow:
    tid = new_id()
    return TaskRow(
        id=tid,
        title=(item.title or _title_from(item.text))[:300],
        text=item.text,
        status=TaskStatus.OPEN.value,
        team_spec=team_spec,
        output_schema=output_schema,
        attempt_count=0,
        read_only=False,
        version=1,
        created_at=now,
        updated_at=now,
        batch_id=batch_id,
        batch_key=item.key,
        task_metadata=item.metadata,
        given_answer=item.answer,
    )


def _session_row(task: TaskRow, now: Any) -> SessionRow:
    session = SessionRow(id=new_id(), task_id=task.id, kind="main", label="main", next_seq=1, created_at=now)
    task.main_session_id = session.id
    return session
