"""Task and validation statuses.

The flags on ``TaskStatus`` are the single source the scheduler, the state machine and the desk
read; nothing else re-derives "can this run?" from the status name.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


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
    def flags(self) -> StatusFlags:
        """This status's row of ``STATUS_FLAGS``."""
        return STATUS_FLAGS[self]

    @property
    def is_open(self) -> bool:
        """The task can still receive feedback or another attempt."""
        return STATUS_FLAGS[self].is_open

    @property
    def is_execution_active(self) -> bool:
        """Work is in flight; a scheduler must not start another run for this task."""
        return STATUS_FLAGS[self].is_execution_active

    @property
    def requires_user_action(self) -> bool:
        """Automatic execution has stopped and only an analyst can move the task on.

        ``needs_revision`` is deliberately excluded here: whether it waits for a person depends
        on who asked for the revision, which the task row records (see
        ``core.tasks.policy.requires_user_action``).
        """
        return STATUS_FLAGS[self].requires_user_action

    @property
    def is_terminal(self) -> bool:
        return STATUS_FLAGS[self].is_terminal


class StatusFlags(NamedTuple):
    """What a status means to schedulers, views and the state machine, in one row."""

    is_open: bool
    is_execution_active: bool
    requires_user_action: bool
    is_terminal: bool


_S = TaskStatus
# The one table of status flags (README "Statuses"); ``tests/core/test_status_flags.py`` proves it
# agrees with the transition table: a status is open exactly when a move other than reopen or
# undo leaves it, and terminal exactly when only those do.
#
# ``failed`` is open, where seed 002 calls it terminal: a task that ended with no usable answer
# still accepts a revision (a new attempt with the analyst's note, every earlier attempt's
# evidence kept) or an abandon. Asking the analyst to reopen it first would add a step that
# records nothing a revision does not (issue 15: no dead ends). It waits for the analyst, like
# the review statuses. Only the analyst's own endings, closed and abandoned, are terminal.
STATUS_FLAGS: dict[TaskStatus, StatusFlags] = {
    _S.OPEN: StatusFlags(
        is_open=True, is_execution_active=False, requires_user_action=False, is_terminal=False
    ),
    _S.RUNNING: StatusFlags(
        is_open=True, is_execution_active=True, requires_user_action=False, is_terminal=False
    ),
    _S.VALIDATING: StatusFlags(
        is_open=True, is_execution_active=True, requires_user_action=False, is_terminal=False
    ),
    _S.AWAITING_FEEDBACK: StatusFlags(
        is_open=True, is_execution_active=False, requires_user_action=True, is_terminal=False
    ),
    _S.NEEDS_REVIEW: StatusFlags(
        is_open=True, is_execution_active=False, requires_user_action=True, is_terminal=False
    ),
    _S.NEEDS_REVISION: StatusFlags(
        is_open=True, is_execution_active=False, requires_user_action=False, is_terminal=False
    ),
    _S.FAILED: StatusFlags(
        is_open=True, is_execution_active=False, requires_user_action=True, is_terminal=False
    ),
    _S.CLOSED: StatusFlags(
        is_open=False, is_execution_active=False, requires_user_action=False, is_terminal=True
    ),
    _S.ABANDONED: StatusFlags(
        is_open=False, is_execution_active=False, requires_user_action=False, is_terminal=True
    ),
}


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
