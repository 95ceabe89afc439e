"""ReviewService: the analyst's word on a task, which is final until the analyst takes it back.

Each action names the task version the analyst was looking at; if the task changed since, the
action fails with a conflict and changes nothing, so two analysts never silently overwrite each
other. What a status allows comes from the state machine, never from the caller. A decision can be
reopened (closed or abandoned tasks) or undone (the last one, briefly, if nobody acted since); both
are new events and feedback rows: nothing already recorded is edited or erased.
"""

from __future__ import annotations

import getpass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core.domain import FeedbackAction, TaskStatus
from core.domain.event_codec import decode_as
from core.domain.event_payloads import AnalystDecision
from core.domain.facts import AttemptState, EventKind, RevisionRequester
from core.domain.reasons import check_reason, load_reasons
from core.errors import RefusedAction, VersionConflict
from core.events import TaskChange, TaskChanged
from core.profiles import roles_for_task
from core.store import TaskRecord, new_event
from core.tasks.dispatch import abort_task_jobs
from core.tasks.policy import (
    attempt_ending,
    ensure_writable,
    is_writable,
    read_only_reason,
    reopen_trigger,
    source_bundle,
    undo_refusal,
)
from core.tasks.state_machine import IllegalTransition, Trigger, can, next_status, undo_trigger

if TYPE_CHECKING:  # the agent and the LLM gateway load with the service, not with the desk's queue
    from core.config import Settings
    from core.tasks.service import TaskService

_TRIGGERS = {
    FeedbackAction.SATISFIED: Trigger.FEEDBACK_SATISFIED,
    FeedbackAction.REVISE: Trigger.FEEDBACK_REVISE,
    FeedbackAction.ABANDON: Trigger.FEEDBACK_ABANDON,
}
REOPEN, UNDO = "reopen", "undo"  # feedback actions beyond S/R/A, stored in the same records


def allowed_actions(task: TaskRecord) -> set[FeedbackAction]:
    """What the desk may enable for this task; read-only (imported) tasks allow nothing."""
    if not is_writable(task):
        return set()
    return {action for action, trigger in _TRIGGERS.items() if can(task.status, trigger)}


def can_reopen(task: TaskRecord) -> bool:
    return is_writable(task) and any(
        can(task.status, t) for t in (Trigger.REOPEN, Trigger.REOPEN_UNUSABLE, Trigger.REOPEN_UNRUN)
    )


def reviewer_name(configured: str | None) -> str:
    """Who decided: the configured name, else the OS account (decisions are never anonymous)."""
    if configured:
        return configured
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "analyst"


class ReviewService:
    def __init__(self, tasks: TaskService) -> None:
        self.tasks = tasks
        self.store = tasks.store
        self.last_decided: str | None = None
        """The task this service last decided on (not an undo): what the desk's Ctrl+Z takes back,
        wherever the selection has moved since."""

    @property
    def settings(self) -> Settings:
        """The workspace's settings as they stand now (applied on Save, never a copy)."""
        return self.tasks.settings

    async def feedback(
        self,
        task_id: str,
        action: FeedbackAction,
        *,
        expected_version: int,
        prompt: str | None = None,
        note: str | None = None,
        reason: str | None = None,
    ) -> TaskRecord:
        """Record the analyst's action. ``revise`` leaves the task in needs_revision: the caller
        starts the new attempt (``TaskService.run``/``start``) so it decides where it runs."""
        reason = check_reason(reason, load_reasons(self.settings.reasons))
        task = await self._writable(task_id, expected_version)
        trigger = _TRIGGERS[action]
        if not can(task.status, trigger):
            raise IllegalTransition(task.status, trigger)
        if action is FeedbackAction.REVISE and not (prompt and prompt.strip()):
            raise RefusedAction("a revision needs a prompt saying what to change")
        if action is FeedbackAction.REVISE:  # a revision that cannot run is refused before it is recorded
            await self.tasks.ws.gateway.check_ready(roles_for_task(self.settings, task.team_spec))
        if action is FeedbackAction.ABANDON and self.tasks.is_running_here(task.id):
            await self.tasks.cancel(task.id)
            task = await self.store.get_task(task.id)
        fields: dict[str, Any] = {"runner": None}
        if action is FeedbackAction.REVISE:
            fields["revision_requested_by"] = RevisionRequester.ANALYST
        return await self._decide(
            task, trigger, action.value, prompt=prompt, note=note, reason=reason, **fields
        )

    async def reopen(self, task_id: str, *, reason: str, expected_version: int | None = None) -> TaskRecord:
        """Bring a closed or abandoned task back; the reason is kept as the decision's note."""
        if not reason.strip():
            raise RefusedAction("reopening a task needs a reason")
        task = await self._writable(task_id, expected_version)
        trigger = reopen_trigger(await self.store.list_attempts(task.id, resolve=False))
        if not can(task.status, trigger):
            raise IllegalTransition(task.status, trigger)
        return await self._decide(task, trigger, REOPEN, note=reason.strip())

    async def undo(
        self,
        task_id: str,
        *,
        expected_version: int | None = None,
        note: str | None = None,
        take_over: bool = False,
    ) -> TaskRecord:
        """Take back the last decision: the task returns to the status it had before it.

        Refused once anyone (a run, another analyst) moved the task after that decision, or after
        ``UNDO_WINDOW``, and when the decision was another reviewer's unless ``take_over`` (one
        reviewer silently reversing a colleague's later decision is what this guards against). The
        undo is its own event naming the decision it reverses.
        """
        task = await self._writable(task_id, expected_version)
        events = await self.store.get_task_events(task.id, kinds=[EventKind.ANALYST_FEEDBACK_RECORDED])
        last = events[-1] if events else None
        p = decode_as(last, AnalystDecision) if last is not None else None
        if last is None or p is None or p.action == UNDO:
            raise RefusedAction(f"task {task.id[:8]} has no decision to undo")
        if p.version_after is None or p.from_status is None:
            raise RefusedAction(f"the last decision on task {task.id[:8]} predates undo; reopen it instead")
        me = reviewer_name(self.settings.reviewer)
        if p.reviewer and p.reviewer != me and not take_over:
            raise RefusedAction(
                f"the last decision on task {task.id[:8]} ({p.action}) was {p.reviewer}'s, not {me}'s; "
                "undo another reviewer's decision only with --take-over (recorded)"
            )
        decided_at = p.time or last.created_at
        refusal = undo_refusal(decided_at, p.version_after, task, datetime.now(UTC))
        if refusal is not None:
            raise RefusedAction(refusal)
        before = p.from_status
        if before.is_execution_active:
            raise RefusedAction(f"that {p.action} stopped a run, which cannot be restarted by undo")
        trigger = undo_trigger(before)
        if not can(task.status, trigger):
            raise IllegalTransition(task.status, trigger)
        requested = p.revision_requested_by_before
        return await self._decide(
            task,
            trigger,
            UNDO,
            note=note,
            undoes={"event_id": last.id, "action": p.action, "reviewer": p.reviewer},
            revision_requested_by=RevisionRequester(requested) if requested else None,
        )

    async def _writable(self, task_id: str, expected_version: int | None) -> TaskRecord:
        task = await self.store.get_task(task_id)
        ensure_writable(task)
        if expected_version is not None and task.version != expected_version:
            raise VersionConflict(
                f"task {task.id[:8]} changed since it was read (version {expected_version}, now "
                f"{task.version}, status {task.status.value}); reload and try again"
            )
        return task

    async def _decide(
        self,
        task: TaskRecord,
        trigger: Trigger,
        action: str,
        *,
        prompt: str | None = None,
        note: str | None = None,
        undoes: dict[str, Any] | None = None,
        reason: str | None = None,
        **fields: Any,
    ) -> TaskRecord:
        """One analyst move: status, event and feedback row in one transaction.

        The event carries the version the move produces and what it replaced, so ``undo`` can
        check that nobody acted since and put back exactly what was there.
        """
        target = next_status(task.status, trigger)
        reviewer = reviewer_name(self.settings.reviewer)
        now = datetime.now(UTC)
        assert task.main_session_id is not None
        requested = task.revision_requested_by
        event = new_event(
            AnalystDecision(
                reviewer=reviewer,
                time=now,
                action=action,
                prompt=prompt,
                note=note,
                from_status=task.status,
                to_status=target,
                trigger=trigger.value,
                version_after=task.version + 1,
                revision_requested_by_before=requested.value if requested else None,
                undoes=undoes,
                reason=reason,
            )
        )
        attempts = await self.store.list_attempts(task.id, resolve=False)
        latest = attempts[-1] if attempts else None
        update: dict[str, Any] = {
            "expected_version": task.version,
            "event": (task.main_session_id, event),
            "feedback": {
                "attempt_id": latest.id if latest else None,
                "action": action,
                "prompt": prompt,
                "note": note,
                "reason": reason,
                "reviewer": reviewer,
                "from_status": task.status.value,
                "to_status": target.value,
                "created_at": now,
            },
            "status": target,
            **fields,
        }
        if latest is not None and latest.state is AttemptState.RUNNING and target is TaskStatus.ABANDONED:
            # Abandoning a run that lives in another process (or in none): the attempt ends here,
            # with the task's move; that runner's next write finds the task abandoned and stops.
            ending = attempt_ending(latest, AttemptState.CANCELLED, latest.validation_outcome)
            updated = await self.store.update_task(task.id, ending=(latest.id, ending), **update)
        else:
            updated = await self.store.update_task(task.id, **update)
        if action == FeedbackAction.ABANDON:  # a worker running it stops through procrastinate's abort
            await abort_task_jobs(self.store, task.id)
        self.last_decided = None if action == UNDO else task.id
        self.tasks.ws.bus.publish(
            TaskChanged(task_id=task.id, change=TaskChange.STATUS, status=target, version=updated.version)
        )
        return updated


__all__ = [
    "REOPEN",
    "UNDO",
    "ReviewService",
    "TaskStatus",
    "allowed_actions",
    "can_reopen",
    "read_only_reason",
    "source_bundle",
]
