"""ReviewService: the analyst's word on a task, which is final.

Each action names the task version the analyst was looking at; if the task changed since, the
action fails with a conflict and changes nothing, so two analysts never silently overwrite each
other. What a status allows comes from the state machine, never from the caller.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.domain import FeedbackAction, TaskStatus
from core.domain.facts import AttemptState, EventKind, RevisionRequester
from core.errors import RefusedAction, VersionConflict
from core.events import TaskChange, TaskChanged
from core.store import NewEvent, TaskRecord
from core.tasks.policy import attempt_ending, ensure_writable, is_writable
from core.tasks.service import TaskService, reviewer_name
from core.tasks.state_machine import IllegalTransition, Trigger, can, next_status

_TRIGGERS = {
    FeedbackAction.SATISFIED: Trigger.FEEDBACK_SATISFIED,
    FeedbackAction.REVISE: Trigger.FEEDBACK_REVISE,
    FeedbackAction.ABANDON: Trigger.FEEDBACK_ABANDON,
}


def allowed_actions(task: TaskRecord) -> set[FeedbackAction]:
    """What the desk may enable for this task; read-only (imported) tasks allow nothing."""
    if not is_writable(task):
        return set()
    return {action for action, trigger in _TRIGGERS.items() if can(task.status, trigger)}


class ReviewService:
    def __init__(self, tasks: TaskService) -> None:
        self.tasks = tasks
        self.store = tasks.store
        self.settings = tasks.settings

    async def feedback(
        self,
        task_id: str,
        action: FeedbackAction,
        *,
        expected_version: int,
        prompt: str | None = None,
        note: str | None = None,
    ) -> TaskRecord:
        """Record the analyst's action. ``revise`` leaves the task in needs_revision: the caller
        starts the new attempt (``TaskService.run``/``start``) so it decides where it runs."""
        task = await self.store.get_task(task_id)
        ensure_writable(task)
        if task.version != expected_version:
            raise VersionConflict(
                f"task {task.id[:8]} changed since it was read (version {expected_version}, now "
                f"{task.version}, status {task.status.value}); reload and try again"
            )
        trigger = _TRIGGERS[action]
        if not can(task.status, trigger):
            raise IllegalTransition(task.status, trigger)
        if action is FeedbackAction.REVISE and not (prompt and prompt.strip()):
            raise RefusedAction("a revision needs a prompt saying what to change")
        if action is FeedbackAction.ABANDON and self.tasks.is_running_here(task.id):
            await self.tasks.cancel(task.id)
            task = await self.store.get_task(task.id)
        target = next_status(task.status, trigger)
        reviewer = reviewer_name(self.settings.reviewer)
        now = datetime.now(UTC)
        assert task.main_session_id is not None
        event = NewEvent(
            kind=EventKind.ANALYST_FEEDBACK_RECORDED,
            payload={
                "reviewer": reviewer,
                "time": now.isoformat(),
                "action": action.value,
                "prompt": prompt,
                "note": note,
                "from": task.status.value,
                "to": target.value,
            },
        )
        fields: dict[str, Any] = {"status": target, "runner": None}
        if action is FeedbackAction.REVISE:
            fields["revision_requested_by"] = RevisionRequester.ANALYST
        attempts = await self.store.list_attempts(task.id)
        latest = attempts[-1] if attempts else None
        update: dict[str, Any] = {
            "expected_version": task.version,
            "event": (task.main_session_id, event),
            "feedback": {
                "attempt_id": latest.id if latest else None,
                "action": action.value,
                "prompt": prompt,
                "note": note,
                "reviewer": reviewer,
                "from_status": task.status.value,
                "to_status": target.value,
                "created_at": now,
            },
            **fields,
        }
        if latest is not None and latest.state is AttemptState.RUNNING:
            # Abandoning a run that lives in another process (or in none): the attempt ends here,
            # with the task's move; that runner's next write finds the task abandoned and stops.
            ending = attempt_ending(latest, AttemptState.CANCELLED, latest.validation_outcome)
            updated = await self.store.update_task(task.id, ending=(latest.id, ending), **update)
        else:
            updated = await self.store.update_task(task.id, **update)
        if action is FeedbackAction.ABANDON:  # a worker running it stops through procrastinate's abort
            from core.workers.dispatch import abort_task_jobs

            await abort_task_jobs(self.store, task.id)
        self.tasks.ws.bus.publish(
            TaskChanged(task_id=task.id, change=TaskChange.STATUS, status=target, version=updated.version)
        )
        return updated


__all__ = ["ReviewService", "TaskStatus", "allowed_actions"]
