"""Task and validation statuses.

The flags on ``TaskStatus`` are the single source the scheduler, the state machine and the desk
read; nothing else re-derives "can this run?" from the status name.
"""

from __future__ import annotations

from enum import StrEnum


class TaskStatus(StrEnum):
    OPEN = "open"
    RUNNING = "running"
    VALIDATING = "validating"
    AWAITING_FEEDBACK = "awaiting_feedback"
    NEEDS_REVIEW = "needs_review"
    NEEDS_REVISION = "needs_revision"
    FAILED = "failed"
    CLOSED = "closed"
    ABANDONED = "abandoned"

    @property
    def is_open(self) -> bool:
        """The task can still receive feedback or another attempt."""
        return self not in _TERMINAL

    @property
    def is_execution_active(self) -> bool:
        """Work is in flight; a scheduler must not start another run for this task."""
        return self in (TaskStatus.RUNNING, TaskStatus.VALIDATING)

    @property
    def requires_user_action(self) -> bool:
        """Automatic execution has stopped and only an analyst can move the task on.

        ``needs_revision`` is deliberately excluded here: whether it waits for a person depends
        on who asked for the revision, which the task row records (see
        ``core.tasks.policy.requires_user_action``).
        """
        return self in (TaskStatus.AWAITING_FEEDBACK, TaskStatus.NEEDS_REVIEW)

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({TaskStatus.FAILED, TaskStatus.CLOSED, TaskStatus.ABANDONED})


class ValidationStatus(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"
    VALIDATOR_ERROR = "validator_error"


class ValidationOutcome(StrEnum):
    """What the analyst is told about endorsement; ``None`` on a task means no answer reached validation."""

    ACCEPTED = "accepted"
    FORCE_ACCEPTED = "force_accepted"  # delivered, but the validator did not endorse it
    UNVALIDATED = "unvalidated"  # delivered without a validation (policy: keywords or off)


class FeedbackAction(StrEnum):
    SATISFIED = "satisfied"
    REVISE = "revise"
    ABANDON = "abandon"
