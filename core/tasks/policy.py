"""Task policy beside the table: what a verdict, a stopped run or a read-only task means for a task.

``state_machine`` says which moves exist; this module says which move a situation calls for and
what the ending attempt records. Both are pure, so the rules are pinned by tests and read by the
docs without running anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from core.domain.facts import AttemptState, FinishReason, RevisionRequester
from core.domain.records import AttemptRecord, TaskRecord
from core.domain.status import TaskStatus, ValidationOutcome, ValidationStatus
from core.errors import RefusedAction
from core.tasks.state_machine import Trigger

if TYPE_CHECKING:
    from core.domain.validation import ValidationResult


class ReadOnlyTask(RefusedAction):
    """The task was imported from a case bundle: its record is evidence and is never rewritten."""


def is_writable(task: TaskRecord) -> bool:
    """The one read-only rule: every path that would run, review or recover a task asks it."""
    return not task.read_only


def ensure_writable(task: TaskRecord) -> None:
    if not is_writable(task):
        raise ReadOnlyTask(f"task {task.id[:8]} was imported read-only from a case bundle")


def requires_user_action(task: TaskRecord) -> bool:
    """Only an analyst can move the task on; ``needs_revision`` waits for one only when an analyst asked."""
    if task.status is TaskStatus.NEEDS_REVISION:
        return task.revision_requested_by == RevisionRequester.ANALYST
    return task.status.requires_user_action


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)

    trigger: Trigger
    outcome: ValidationOutcome | None
    retry: bool = False
    reason: str


_LENGTH_CUT = "the answer was cut off at the model's output token limit (finish_reason=length)"


def decide(
    *,
    status: ValidationStatus,
    skipped: bool,
    validations_done: int,
    max_validations: int,
    schema_ok: bool = True,
    truncated: bool = False,
    truncated_reason: str | None = None,
) -> Decision:
    """The verdict-to-status rule in one pure function (pinned by tests, read by the docs).

    ``truncated_reason`` says how the answer was cut (the output limit, or a stream the server
    ended early); the output limit is assumed when it is not given.
    """
    if truncated:
        # Whatever the validator thought of the visible part, the answer is cut off: an analyst
        # decides, and nothing retries a model into the same output limit automatically.
        return Decision(
            trigger=Trigger.VERDICT_UNCONFIRMED,
            outcome=ValidationOutcome.FORCE_ACCEPTED,
            reason=f"{truncated_reason or _LENGTH_CUT}; delivered for review",
        )
    if skipped:
        # Seed 002 reserves awaiting_feedback for answers the validator accepted; an answer
        # nobody judged rests with the unconfirmed ones, in needs_review, labelled unvalidated.
        return Decision(
            trigger=Trigger.VERDICT_UNCONFIRMED,
            outcome=ValidationOutcome.UNVALIDATED,
            reason="delivered without validation (policy)",
        )
    if status is ValidationStatus.ACCEPTED:
        if not schema_ok:
            return Decision(
                trigger=Trigger.VERDICT_UNCONFIRMED,
                outcome=ValidationOutcome.FORCE_ACCEPTED,
                reason="accepted by the validator but the answer does not match the declared output schema",
            )
        return Decision(
            trigger=Trigger.VERDICT_ACCEPTED,
            outcome=ValidationOutcome.ACCEPTED,
            reason="the validator accepted",
        )
    if status is ValidationStatus.REJECTED and validations_done < max_validations:
        return Decision(
            trigger=Trigger.VERDICT_REJECTED_RETRY,
            outcome=None,
            retry=True,
            reason=f"rejected; automatic retry {validations_done + 1} of {max_validations}",
        )
    reasons = {
        ValidationStatus.REJECTED: "rejected on the last attempt; delivered for review",
        ValidationStatus.INSUFFICIENT_EVIDENCE: "the validator could not confirm the answer from the evidence",
        ValidationStatus.VALIDATOR_ERROR: "the validator failed to reach a reliable decision",
    }
    return Decision(
        trigger=Trigger.VERDICT_UNCONFIRMED, outcome=ValidationOutcome.FORCE_ACCEPTED, reason=reasons[status]
    )


class VerdictMove(BaseModel):
    """What a verdict writes when it moves the task: the task's latest verdict fields, the
    attempt's facts, and the retry's prompt when the validator asked for one."""

    model_config = ConfigDict(frozen=True)

    task_fields: dict[str, Any]
    attempt_facts: dict[str, Any]
    next_prompt: str | None = None


def verdict_move(result: ValidationResult, skipped: bool, decision: Decision) -> VerdictMove:
    """The fields a judged attempt writes; a skipped validation leaves no verdict behind."""
    facts = {
        "validation_status": None if skipped else result.status.value,
        "validation_score": None if skipped else result.score,
    }
    fields: dict[str, Any] = {
        "latest_validation_status": facts["validation_status"],
        "latest_score": facts["validation_score"],
        "latest_category": None if skipped else result.category.value,
        "validation_outcome": decision.outcome,
    }
    if not decision.retry:
        return VerdictMove(task_fields={**fields, "runner": None}, attempt_facts=facts)
    # The desk's first paint imports this module: the prompts (and the evidence package behind
    # them) load with the first verdict, not at start-up.
    from core.tasks.prompts import validator_revision_message

    # The runner keeps the task: the retry starts at once, in this process.
    fields["revision_requested_by"] = RevisionRequester.VALIDATOR
    prompt = validator_revision_message(
        result.recommended_revision_prompt, result.issues, result.category.value
    )
    return VerdictMove(task_fields=fields, attempt_facts=facts, next_prompt=prompt)


def interruption(attempt: AttemptRecord | None) -> tuple[Trigger, ValidationOutcome | None]:
    """Where a run that stopped unexpectedly goes: review if it left an answer (delivered without
    endorsement), failed if not. Crash recovery and in-process failures share this rule."""
    if attempt is not None and (attempt.final_output or "").strip():
        return Trigger.INTERRUPTED_USABLE, ValidationOutcome.FORCE_ACCEPTED
    return Trigger.INTERRUPTED_UNUSABLE, None


def revision_fallback(
    origin: TaskStatus | None, earlier: Sequence[AttemptRecord]
) -> tuple[Trigger, ValidationOutcome | None] | None:
    """Where a revision or retry that produced no answer sends its task, or None (then ``failed``).

    The task already holds a usable answer from an earlier attempt: losing it because the next
    attempt hit a provider error would be a dead end (issue 15), so the task goes back to review
    with that answer and its outcome, and the failed attempt stays on record. Only an answer the
    validator accepted returns to ``awaiting_feedback``; anything else rests in ``needs_review``.
    """
    usable = [a for a in earlier if (a.final_output or "").strip()]
    if not usable:
        return None
    outcome = usable[-1].validation_outcome or ValidationOutcome.FORCE_ACCEPTED
    if origin is TaskStatus.AWAITING_FEEDBACK and outcome is ValidationOutcome.ACCEPTED:
        return Trigger.REVISION_FAILED_TO_FEEDBACK, outcome
    return Trigger.REVISION_FAILED_TO_REVIEW, outcome


def reopen_trigger(attempts: Sequence[AttemptRecord]) -> Trigger:
    """A reopened task waits where its answer puts it: review, failed (none usable) or open (never ran)."""
    if not attempts:
        return Trigger.REOPEN_UNRUN
    if any((a.final_output or "").strip() for a in attempts):
        return Trigger.REOPEN
    return Trigger.REOPEN_UNUSABLE


# Long enough to notice a slip and come back to it, short enough that an undo never rewrites a
# decision others have long since relied on. The version check is the real guard.
UNDO_WINDOW = timedelta(minutes=10)


def undo_refusal(decided_at: datetime, version_after: int, task: TaskRecord, now: datetime) -> str | None:
    """Why the last decision can no longer be undone, or None when it can."""
    if task.version != version_after:
        return (
            f"task {task.id[:8]} changed after that decision (version {version_after}, now "
            f"{task.version}, status {task.status.value}); reopen or decide again instead"
        )
    if now - decided_at > UNDO_WINDOW:
        minutes = int(UNDO_WINDOW.total_seconds() // 60)
        return f"the last decision on task {task.id[:8]} is older than {minutes} minutes; reopen it instead"
    return None


def attempt_ending(
    attempt: AttemptRecord,
    state: AttemptState,
    outcome: ValidationOutcome | None,
    *,
    now: datetime | None = None,
    **facts: Any,
) -> dict[str, Any]:
    """The fields that end ``attempt``, written with the task's move in one transaction.

    A running attempt records how it ended (``state``), when, and the outcome its task is
    delivered with. An attempt that already ended keeps its state and time: only its outcome is
    brought in line with the task's (a run cancelled at shutdown, then recovered). A stopped run
    that never recorded why it stopped is marked interrupted, so nobody has to infer it.
    """
    fields: dict[str, Any] = {"validation_outcome": outcome}
    if attempt.state is AttemptState.RUNNING:
        fields.update(state=state, finished_at=now or datetime.now(UTC), **facts)
        if state is AttemptState.INTERRUPTED and attempt.finish_reason is None:
            fields["finish_reason"] = FinishReason.INTERRUPTED
    return fields


def read_only_reason(task: TaskRecord) -> str | None:
    """The one sentence every view shows for a task nobody may act on (None when it is writable)."""
    if is_writable(task):
        return None
    return (
        f"read-only: imported from {source_bundle(task)}; decisions belong to the workspace that exported it"
    )


def source_bundle(task: TaskRecord) -> str:
    """Where an imported task came from, short enough for a list row ("case bundle 1f2e3d4c5b6a")."""
    origin = task.origin or ""
    if origin.startswith("bundle:"):
        return f"case bundle {origin.removeprefix('bundle:')[:12]}"
    return origin or "a case bundle"


__all__ = [
    "UNDO_WINDOW",
    "Decision",
    "ReadOnlyTask",
    "attempt_ending",
    "decide",
    "ensure_writable",
    "interruption",
    "is_writable",
    "read_only_reason",
    "reopen_trigger",
    "requires_user_action",
    "revision_fallback",
    "source_bundle",
    "undo_refusal",
]
