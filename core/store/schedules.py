"""Schedules: recurring tasks, their next firing and last verdict.

Firing is claimed with a compare-and-set on ``next_run_at``: two desks or workers that both see a
schedule due fire it once, whoever moves the time forward first.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update

from core.domain.records import _Record
from core.store.base import StoreBase, new_id
from core.store.models import ScheduleRow, utcnow


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

    async def record_verdict(self, schedule_id: str, verdict: str) -> None:
        async with self.store._write() as s:
            await s.execute(
                update(ScheduleRow).where(ScheduleRow.id == schedule_id).values(last_verdict=verdict[:64])
            )

    async def remove(self, schedule_id: str) -> bool:
        async with self.store._write() as s:
            row = await s.get(ScheduleRow, schedule_id)
            if row is None:
                return False
            await s.delete(row)
            return True
