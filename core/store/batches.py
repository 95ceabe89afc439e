"""Batches: many tasks queued from one file, each row at most once.

A batch is named by its file's content hash and each task by (batch id, row key) under a unique
index, so re-running the same file, even from two machines at once, queues nothing twice: the
database refuses the duplicate, not a check that could race. Rows are written in chunks, each
chunk one transaction with the tasks' main sessions, so a task never exists without its session,
and each table's rows of a chunk one bulk insert (not an ORM object and a flush per row).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError

from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.store.base import StoreBase, new_id
from core.store.models import BatchRow, SessionRow, TaskRow, utcnow
from core.store.tasks import _title_from

CHUNK = 500  # rows per transaction: one bulk insert per table, and one batch of jobs


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
        on_chunk: Callable[[list[str]], Awaitable[object]] | None = None,
    ) -> BatchResult:
        """Insert the rows not yet queued under ``batch_id``; report each row's task id.

        ``on_chunk`` is handed each chunk's new task ids once they are committed (the batch
        command queues their jobs with it); it runs while the next chunk is inserted, one at a
        time, and every call has finished when this returns.
        """
        result = BatchResult(batch_id=batch_id)
        await self._ensure_batch(batch_id, source, len(items))
        known = await self._existing(batch_id)  # once: a new batch has none, a re-run has them all
        pending: asyncio.Task[object] | None = None
        try:
            for start in range(0, len(items), CHUNK):
                chunk = items[start : start + CHUNK]
                before = len(result.new_ids)
                ids = await self._queue_chunk(batch_id, chunk, known, (team_spec, output_schema), result)
                result.task_ids.extend(ids)
                if pending is not None:  # one chunk's jobs in flight at a time; its error surfaces here
                    done, pending = pending, None
                    await done
                if on_chunk is not None and len(result.new_ids) > before:
                    pending = asyncio.ensure_future(on_chunk(result.new_ids[before:]))
                if on_progress is not None:
                    on_progress(len(chunk))
            if pending is not None:
                done, pending = pending, None
                await done
        finally:
            if pending is not None:  # an insert failed: the chunk committed before still gets its jobs
                with contextlib.suppress(Exception):  # the insert's error is the one to report
                    await pending
        return result

    async def _ensure_batch(self, batch_id: str, source: str, rows: int) -> None:
        async with self.store._write() as s:
            if await s.get(BatchRow, batch_id) is None:
                s.add(BatchRow(id=batch_id, source=source[:500], row_count=rows, created_at=utcnow()))
        # A concurrent first run may have added it meanwhile; the unique id makes that harmless.

    async def _existing(self, batch_id: str) -> dict[str, str]:
        """Row key -> task id of the rows already queued under ``batch_id``.

        The whole batch in one query, not the chunk's keys in an ``IN`` list per chunk: on
        PostgreSQL a thousand-key ``IN`` is a thousand parameters parsed and planned each time.
        """
        async with self.store._read() as s:
            rows = await s.execute(select(TaskRow.batch_key, TaskRow.id).where(TaskRow.batch_id == batch_id))
            return {str(k): str(i) for k, i in rows.all()}

    async def _queue_chunk(
        self,
        batch_id: str,
        chunk: Sequence[BatchItem],
        known: dict[str, str],
        spec: tuple[str | None, dict[str, Any] | None],
        result: BatchResult,
    ) -> list[str]:
        """Insert the chunk's rows not in ``known`` (updated with what this finds and adds)."""
        team_spec, output_schema = spec
        for _ in range(3):  # a concurrent run of the same file can win a row between read and write
            fresh = [i for i in chunk if i.key not in known]
            now = utcnow()
            tasks = [_task_row(item, batch_id, team_spec, output_schema, now) for item in fresh]
            new_ids = {item.key: task["id"] for item, task in zip(fresh, tasks, strict=True)}
            try:
                async with self.store._write() as s:
                    if tasks:  # ORM bulk inserts: one executemany each, no unit of work
                        await s.execute(insert(TaskRow), tasks)
                        await s.execute(insert(SessionRow), [_session_row(t, now) for t in tasks])
            except IntegrityError:
                known.update(await self._existing(batch_id))  # what the concurrent run queued
                continue
            known.update(new_ids)
            result.created += len(fresh)
            result.new_ids.extend(new_ids[i.key] for i in fresh)
            result.existing += len(chunk) - len(fresh)
            return [known[i.key] for i in chunk]
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
) -> dict[str, Any]:
    """A new task's columns; its main session's id is chosen here so both go in without a flush."""
    return {
        "id": new_id(),
        "title": (item.title or _title_from(item.text))[:300],
        "text": item.text,
        "status": TaskStatus.OPEN.value,
        "team_spec": team_spec,
        "output_schema": output_schema,
        "main_session_id": new_id(),
        "attempt_count": 0,
        "read_only": False,
        "version": 1,
        "created_at": now,
        "updated_at": now,
        "batch_id": batch_id,
        "batch_key": item.key,
        "task_metadata": item.metadata,
        "given_answer": item.answer,
    }


def _session_row(task: dict[str, Any], now: Any) -> dict[str, Any]:
    return {
        "id": task["main_session_id"],
        "task_id": task["id"],
        "kind": "main",
        "label": "main",
        "next_seq": 1,
        "created_at": now,
    }
