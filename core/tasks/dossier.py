"""Everything stored about one task, gathered in one read: what ``show``, the desk and audits use."""

from __future__ import annotations

from pydantic import BaseModel

from core.domain import TaskEvidencePacket
from core.store import (
    AttemptRecord,
    EventRecord,
    FeedbackRecord,
    SessionRecord,
    Store,
    TaskRecord,
    ValidationRecord,
)


class TaskDossier(BaseModel):
    task: TaskRecord
    attempts: list[AttemptRecord]
    validations: list[ValidationRecord]
    feedback: list[FeedbackRecord]
    sessions: list[SessionRecord]
    events: list[EventRecord]

    def packet(self, attempt_index: int) -> TaskEvidencePacket | None:
        for a in self.attempts:
            if a.index == attempt_index and a.packet is not None:
                return TaskEvidencePacket.model_validate(a.packet)
        return None

    def validation_for(self, attempt_index: int) -> ValidationRecord | None:
        found = [v for v in self.validations if v.attempt_index == attempt_index]
        return found[-1] if found else None


async def load_dossier(store: Store, task_id: str, *, with_events: bool = True) -> TaskDossier:
    task = await store.get_task(task_id)
    return TaskDossier(
        task=task,
        attempts=await store.list_attempts(task.id),
        validations=await store.list_validations(task.id),
        feedback=await store.list_feedback(task.id),
        sessions=await store.list_sessions(task.id),
        events=await store.get_task_events(task.id) if with_events else [],
    )
