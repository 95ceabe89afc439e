"""Attempts: one row per try at a task, numbered per task."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from core.domain.records import AttemptRecord
from core.store.base import StoreBase, new_id
from core.store.models import AttemptRow, utcnow
from core.store.search_index import index_attempt


class AttemptRepository(StoreBase):
    """A mixin of ``Store``."""

    async def create_attempt(self, task_id: str, index: int, *, trigger: str, prompt: str) -> AttemptRecord:
        row = AttemptRow(
            id=new_id(), task_id=task_id, index=index, trigger=trigger, prompt=prompt, state="running"
        )
        row.started_at = utcnow()
        return await self._insert(row, AttemptRecord)

    async def update_attempt(self, attempt_id: str, **fields: Any) -> AttemptRecord:
        values = {k: (v.value if hasattr(v, "value") else v) for k, v in fields.items()}
        async with self._write() as s:
            await s.execute(update(AttemptRow).where(AttemptRow.id == attempt_id).values(**values))
            if "packet" in values or "final_output" in values:  # the search index, same transaction
                await index_attempt(await s.connection(), attempt_id)
        return await self.get_attempt(attempt_id)

    async def get_attempt(self, attempt_id: str) -> AttemptRecord:
        return await self._get(AttemptRecord, AttemptRow, attempt_id, "attempt")

    async def list_attempts(self, task_id: str) -> list[AttemptRecord]:
        q = select(AttemptRow).where(AttemptRow.task_id == task_id).order_by(AttemptRow.index)
        return await self._select(AttemptRecord, q)
