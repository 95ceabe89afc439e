"""Validator verdicts and analysts' feedback: the review record of each attempt."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from core.domain.records import FeedbackRecord, ValidationRecord
from core.domain.status import TaskStatus
from core.store.base import new_id
from core.store.big_values import offload_values, read_back
from core.store.chunks import ChunkRepository
from core.store.models import FeedbackRow, ValidationRow, utcnow
from core.store.search_index import index_feedback, index_validation


class ReviewRepository(ChunkRepository):
    """A mixin of ``Store``."""

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
        record = ValidationRecord.model_validate(row)
        policy = self.content_policy
        async with self._write() as s:
            if policy.offloads(prompt):
                # The prompt is also the validation event's content: the same chunks, stored once.
                conn = await s.connection()
                stored = await conn.run_sync(
                    offload_values, ValidationRow, {"prompt": prompt}, task_id, policy
                )
                row.prompt, row.prompt_ref = stored["prompt"], stored["prompt_ref"]
            s.add(row)
            await index_validation(await s.connection(), task_id, attempt_index, result, row.created_at)
        return record

    async def list_validations(self, task_id: str) -> list[ValidationRecord]:
        q = select(ValidationRow).where(ValidationRow.task_id == task_id).order_by(ValidationRow.created_at)
        return await read_back(self, ValidationRow, await self._select(ValidationRecord, q))

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
        reason: str | None = None,
    ) -> FeedbackRecord:
        row = FeedbackRow(
            id=new_id(),
            task_id=task_id,
            attempt_id=attempt_id,
            action=action,
            prompt=prompt,
            note=note,
            reason=reason,
            reviewer=reviewer,
            from_status=from_status.value,
            to_status=to_status.value,
        )
        row.created_at = created_at or utcnow()
        async with self._write() as s:
            s.add(row)
            await s.flush()
            await index_feedback(
                await s.connection(),
                task_id=task_id,
                attempt_id=attempt_id,
                feedback_id=row.id,
                note=note,
                prompt=prompt,
                when=row.created_at,
            )
        return FeedbackRecord.model_validate(row)

    async def list_feedback(self, task_id: str) -> list[FeedbackRecord]:
        q = select(FeedbackRow).where(FeedbackRow.task_id == task_id).order_by(FeedbackRow.created_at)
        return await self._select(FeedbackRecord, q)
