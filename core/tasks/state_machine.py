"""The task state machine: one table, every legal move, nothing decided elsewhere.

Services ask the table for the next status by naming *why* the task moves (a ``Trigger``); the
table answers or raises ``IllegalTransition``. Keeping the reasons explicit is what lets the
property tests prove that review statuses are only ever left through analyst feedback.
"""

from __future__ import annotations

from enum import StrEnum

from core.domain.status import TaskStatus
from core.errors import RefusedAction

S = TaskStatus


class Trigger(StrEnum):
    START = "start"
    ANSWER_READY = "answer_ready"
    NO_USABLE_ANSWER = "no_usable_answer"
    VERDICT_ACCEPTED = "verdict_accepted"
    VALIDATION_SKIPPED = "validation_skipped"
    VERDICT_UNCONFIRMED = "verdict_unconfirmed"
    VERDICT_REJECTED_RETRY = "verdict_rejected_retry"
    VERDICT_REJECTED_UNUSABLE = "verdict_rejected_unusable"
    INTERRUPTED_USABLE = "interrupted_usable"
    INTERRUPTED_UNUSABLE = "interrupted_unusable"
    INTERRUPTED_RESUME = "interrupted_resume"  # a job queue retries the job of a dead worker
    FEEDBACK_SATISFIED = "feedback_satisfied"
    FEEDBACK_REVISE = "feedback_revise"
    FEEDBACK_ABANDON = "feedback_abandon"
    # A revision or retry that produced no answer: back to the review status the task came from,
    # still holding the earlier answer (issue 15: a failed revision is never a dead end).
    REVISION_FAILED_TO_REVIEW = "revision_failed_to_review"
    REVISION_FAILED_TO_FEEDBACK = "revision_failed_to_feedback"
    # Reopening a closed or abandoned task: where it lands depends on the answer it holds.
    REOPEN = "reopen"
    REOPEN_UNUSABLE = "reopen_unusable"
    REOPEN_UNRUN = "reopen_unrun"
    # Undoing the analyst's last move: the inverse of one decision edge, named by its target.
    UNDO_TO_OPEN = "undo_to_open"
    UNDO_TO_AWAITING_FEEDBACK = "undo_to_awaiting_feedback"
    UNDO_TO_NEEDS_REVIEW = "undo_to_needs_review"
    UNDO_TO_NEEDS_REVISION = "undo_to_needs_revision"
    UNDO_TO_FAILED = "undo_to_failed"
    UNDO_TO_CLOSED = "undo_to_closed"
    UNDO_TO_ABANDONED = "undo_to_abandoned"

    @property
    def is_analyst_feedback(self) -> bool:
        """A move only an analyst makes (a decision, a reopen or an undo), never a run or a verdict."""
        return self in _ANALYST

    @property
    def is_decision(self) -> bool:
        """A move that can be undone: satisfied, revise, abandon, reopen."""
        return self in _DECISIONS

    @property
    def is_undo(self) -> bool:
        return self.value.startswith("undo_to_")


_REOPEN = (Trigger.REOPEN, Trigger.REOPEN_UNUSABLE, Trigger.REOPEN_UNRUN)
_DECISIONS = frozenset(
    {Trigger.FEEDBACK_SATISFIED, Trigger.FEEDBACK_REVISE, Trigger.FEEDBACK_ABANDON, *_REOPEN}
)
_ANALYST = _DECISIONS | {t for t in Trigger if t.value.startswith("undo_to_")}

_OPEN_STATUSES = [s for s in TaskStatus if s.is_open]
# Statuses a decision can be undone back to: resting ones. An abandon that stopped a run is not
# undone into a run that no longer exists (reopen it instead).
_RESTING = [s for s in TaskStatus if not s.is_execution_active]

TRANSITIONS: dict[tuple[TaskStatus, Trigger], TaskStatus] = {
    (S.OPEN, Trigger.START): S.RUNNING,
    (S.NEEDS_REVISION, Trigger.START): S.RUNNING,
    (S.RUNNING, Trigger.ANSWER_READY): S.VALIDATING,
    (S.RUNNING, Trigger.NO_USABLE_ANSWER): S.FAILED,
    (S.VALIDATING, Trigger.VERDICT_ACCEPTED): S.AWAITING_FEEDBACK,
    (S.VALIDATING, Trigger.VALIDATION_SKIPPED): S.AWAITING_FEEDBACK,
    (S.VALIDATING, Trigger.VERDICT_UNCONFIRMED): S.NEEDS_REVIEW,
    (S.VALIDATING, Trigger.VERDICT_REJECTED_RETRY): S.NEEDS_REVISION,
    (S.VALIDATING, Trigger.VERDICT_REJECTED_UNUSABLE): S.FAILED,
    (S.RUNNING, Trigger.INTERRUPTED_USABLE): S.NEEDS_REVIEW,
    (S.VALIDATING, Trigger.INTERRUPTED_USABLE): S.NEEDS_REVIEW,
    (S.RUNNING, Trigger.INTERRUPTED_UNUSABLE): S.FAILED,
    (S.VALIDATING, Trigger.INTERRUPTED_UNUSABLE): S.FAILED,
    (S.RUNNING, Trigger.INTERRUPTED_RESUME): S.NEEDS_REVISION,
    (S.VALIDATING, Trigger.INTERRUPTED_RESUME): S.NEEDS_REVISION,
    (S.AWAITING_FEEDBACK, Trigger.FEEDBACK_SATISFIED): S.CLOSED,
    (S.NEEDS_REVIEW, Trigger.FEEDBACK_SATISFIED): S.CLOSED,
    (S.AWAITING_FEEDBACK, Trigger.FEEDBACK_REVISE): S.NEEDS_REVISION,
    (S.NEEDS_REVIEW, Trigger.FEEDBACK_REVISE): S.NEEDS_REVISION,
    **{(s, Trigger.FEEDBACK_ABANDON): S.ABANDONED for s in _OPEN_STATUSES},
    # No dead ends: a task that never had a usable answer can still be revised or abandoned.
    (S.FAILED, Trigger.FEEDBACK_REVISE): S.NEEDS_REVISION,
    (S.FAILED, Trigger.FEEDBACK_ABANDON): S.ABANDONED,
    **{(s, Trigger.REVISION_FAILED_TO_REVIEW): S.NEEDS_REVIEW for s in (S.RUNNING, S.VALIDATING)},
    **{(s, Trigger.REVISION_FAILED_TO_FEEDBACK): S.AWAITING_FEEDBACK for s in (S.RUNNING, S.VALIDATING)},
    **{(s, Trigger.REOPEN): S.NEEDS_REVIEW for s in (S.CLOSED, S.ABANDONED)},
    **{(s, Trigger.REOPEN_UNUSABLE): S.FAILED for s in (S.CLOSED, S.ABANDONED)},
    (S.ABANDONED, Trigger.REOPEN_UNRUN): S.OPEN,
}


def undo_trigger(target: TaskStatus) -> Trigger:
    """The undo move that returns a task to ``target``."""
    return Trigger(f"undo_to_{target.value}")


# Every decision edge gets its inverse, so an undo is never a move the table has not seen.
TRANSITIONS.update(
    {
        (dst, undo_trigger(src)): src
        for (src, trigger), dst in list(TRANSITIONS.items())
        if trigger.is_decision and src in _RESTING
    }
)


class IllegalTransition(RefusedAction):
    """A move the table does not allow; names both ends so the message explains itself."""

    def __init__(self, current: TaskStatus, trigger: Trigger, target: TaskStatus | None = None) -> None:
        self.current = current
        self.trigger = trigger
        self.target = target
        wanted = target.value if target is not None else _describe(trigger)
        allowed = ", ".join(sorted(t.value for t in allowed_triggers(current))) or "nothing"
        super().__init__(
            f"cannot move a task from '{current.value}' to '{wanted}' ({trigger.value}); "
            f"allowed from '{current.value}': {allowed}"
        )


def _describe(trigger: Trigger) -> str:
    targets = {to for (_, t), to in TRANSITIONS.items() if t is trigger}
    return "/".join(sorted(s.value for s in targets)) or "?"


def next_status(current: TaskStatus, trigger: Trigger) -> TaskStatus:
    """The status ``trigger`` moves ``current`` to, or ``IllegalTransition``."""
    try:
        return TRANSITIONS[(current, trigger)]
    except KeyError:
        raise IllegalTransition(current, trigger) from None


def allowed_triggers(current: TaskStatus) -> set[Trigger]:
    return {t for (s, t) in TRANSITIONS if s is current}


def can(current: TaskStatus, trigger: Trigger) -> bool:
    """Used by the desk to enable buttons, so it never re-derives the rules itself."""
    return (current, trigger) in TRANSITIONS
