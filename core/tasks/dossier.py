"""Everything stored about one task, gathered in one read: what ``show``, the desk and audits use."""

from __future__ import annotations

from pydantic import BaseModel

from core.domain import TaskEvidencePacket, ValidationOutcome
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

    def attempt_force_accepted(self, attempt: AttemptRecord) -> bool:
        """Delivered without the validator's endorsement (the task's outcome speaks for its last attempt
        while that attempt's own outcome is not yet recorded, e.g. after a crash recovery)."""
        if attempt.validation_outcome is not None:
            return attempt.validation_outcome is ValidationOutcome.FORCE_ACCEPTED
        last = max((a.index for a in self.attempts), default=attempt.index)
        return attempt.index == last and self.task.validation_outcome is ValidationOutcome.FORCE_ACCEPTED

    def attempt_interrupted(self, attempt: AttemptRecord, packet: TaskEvidencePacket | None = None) -> bool:
        """A process stopped during this attempt: its state, a run's end, or the recovery event says so."""
        if attempt.state == "interrupted" or attempt.finish_reason == "interrupted":
            return True
        packet = packet if packet is not None else self.packet(attempt.index)
        if packet is not None:
            runs = [packet.main_run, *packet.team_runs, *(n.evidence for n in packet.team_node_results)]
            for run in runs:
                if run is not None and (
                    run.finish_reason == "interrupted" or any("interrupted" in w for w in run.warnings)
                ):
                    return True
        return any(
            e.kind == "task_interrupted" and e.payload.get("attempt_index", attempt.index) == attempt.index
            for e in self.events
        )

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
