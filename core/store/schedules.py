"""Schedules: recurring tasks, their next firing and last verdict.

Firing is claimed with a compare-and-set on ``next_run_at``: two desks or workers that both see a
schedule due fire it once, whoever moves the time forward first.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update

from core.domain.records import TaskRecord, _Record
from core.errors import RefusedAction
from core.store.base import StoreBase, new_id
from core.store.models import ScheduleRow, TaskRow, utcnow


class FiringStatus(StrEnum):
    """How a schedule's last firing ended (``schedule list``, the worker's summary)."""

    RAN = "ran"  # the task ran to a resting status other than failed
    FAILED = "failed"  # the firing raised, or its task ended failed: ``last_reason`` says why
    SKIPPED = "skipped"  # the previous firing still ran, or someone else moved the task first
    STOPPED = "stopped"  # the schedule's task is closed or abandoned


class ScheduleRecord(_Record):
    id: str
    task_id: str
    cron: str | None
    interval_s: int | None
    checklist: str | None
    verify_heartbeat: bool
    next_run_at: datetime
    last_run_at: datetime | None
    last_verdict: str | None
    last_status: FiringStatus | None = None
    last_reason: str | None = None
    created_at: datetime


class ScheduleRepository:
    def __init__(self, store: StoreBase) -> None:
        self.store = store

    async def add(
        self,
        task_id: str,
        *,
        cron: str | None,
        interval_s: int | None,
        checklist: str | None,
        verify_heartbeat: bool,
        next_run_at: datetime,
    ) -> ScheduleRecord:
        row = ScheduleRow(
            id=new_id(),
            task_id=task_id,
            cron=cron,
            interval_s=interval_s,
            checklist=checklist,
            verify_heartbeat=verify_heartbeat,
            next_run_at=next_run_at,
            created_at=utcnow(),
        )
        return await self.store._insert(row, ScheduleRecord)

    async def get(self, schedule_id: str) -> ScheduleRecord:
        return await self.store._get(ScheduleRecord, ScheduleRow, schedule_id, "schedule")

    async def all(self) -> list[ScheduleRecord]:
        return await self.store._select(ScheduleRecord, select(ScheduleRow).order_by(ScheduleRow.created_at))

    async def due(self, now: datetime | None = None) -> list[str]:
        q = (
            select(ScheduleRow.id)
            .where(ScheduleRow.next_run_at <= (now or utcnow()))
            .order_by(ScheduleRow.next_run_at)
        )
        async with self.store._read() as s:
            return [str(i) for i in (await s.scalars(q)).all()]

    async def owner_of(self, task_id: str) -> ScheduleRecord | None:
        """The schedule that owns ``task_id`` now, if any."""
        rows = await self.store._select(
            ScheduleRecord, select(ScheduleRow).where(ScheduleRow.task_id == task_id)
        )
        return rows[0] if rows else None

    async def owned_task_ids(self) -> set[str]:
        """The tasks schedules own now: only a firing runs them (with the heartbeat's settings)."""
        async with self.store._read() as s:
            return {str(i) for i in (await s.scalars(select(ScheduleRow.task_id))).all()}

    async def claim(self, schedule_id: str, seen_next: datetime, new_next: datetime) -> bool:
        """Move the next firing forward if nobody did since ``seen_next`` was read; True: fire it."""
        async with self.store._write() as s:
            result = await s.execute(
                update(ScheduleRow)
                .where(ScheduleRow.id == schedule_id, ScheduleRow.next_run_at == seen_next)
                .values(next_run_at=new_next, last_run_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    async def continue_series(
        self, schedule_id: str, previous_task_id: str, task_id: str, series: dict[str, Any]
    ) -> TaskRecord:
        """Hand the schedule from ``previous_task_id`` to ``task_id`` and write the series on the new
        task (its ``task_metadata``), in one transaction; returns the new task."""
        async with self.store._write() as s:
            moved = await s.execute(
                update(ScheduleRow)
                .where(ScheduleRow.id == schedule_id, ScheduleRow.task_id == previous_task_id)
                .values(task_id=task_id)
                .execution_options(synchronize_session=False)
            )
            if moved.rowcount != 1:  # type: ignore[attr-defined]
                raise RefusedAction(f"schedule {schedule_id[:8]} no longer owns task {previous_task_id[:8]}")
            await s.execute(
                update(TaskRow)
                .where(TaskRow.id == task_id)
                .values(task_metadata=series)
                .execution_options(synchronize_session=False)
            )
            row = await s.get(TaskRow, task_id)
            assert row is not None
            await s.refresh(row)
            return TaskRecord.model_validate(row)

    async def record_verdict(
        self,
        schedule_id: str,
        verdict: str,
        *,
        status: FiringStatus = FiringStatus.RAN,
        reason: str | None = None,
    ) -> None:
        """The last firing's verdict (short, for lists), how it ended, and why in full."""
        async with self.store._write() as s:
            await s.execute(
                update(ScheduleRow)
                .where(ScheduleRow.id == schedule_id)
                .values(last_verdict=verdict[:64], last_status=status.value, last_reason=reason)
            )

    async def remove(self, schedule_id: str) -> bool:
        async with self.store._write() as s:
            row = await s.get(ScheduleRow, schedule_id)
            if row is None:
                return False
            await s.delete(row)
            return True
