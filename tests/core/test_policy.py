"""Task policy beside the table: pure rules, pinned without running anything."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.domain import TaskStatus, ValidationOutcome
from core.domain.facts import AttemptState, FinishReason, RevisionRequester
from core.domain.records import AttemptRecord, TaskRecord
from core.domain.status import ValidationStatus
from core.errors import RefusedAction
from core.tasks.policy import (
    ReadOnlyTask,
    attempt_ending,
    decide,
    ensure_writable,
    interruption,
    is_writable,
    requires_user_action,
)
from core.tasks.state_machine import Trigger

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def task(**over: Any) -> TaskRecord:
    base: dict[str, Any] = {
        "id": "t1" * 8,
        "title": "t",
        "text": "t",
        "status": TaskStatus.OPEN,
        "validation_outcome": None,
        "team_spec": None,
        "output_schema": None,
        "main_session_id": "s",
        "attempt_count": 0,
        "latest_validation_status": None,
        "latest_score": None,
        "latest_category": None,
        "revision_requested_by": None,
        "read_only": False,
        "origin": None,
        "runner": None,
        "heartbeat_at": None,
        "version": 1,
        "created_at": NOW,
        "updated_at": NOW,
    }
    return TaskRecord.model_validate({**base, **over})


def attempt(**over: Any) -> AttemptRecord:
    base: dict[str, Any] = {
        "id": "a1",
        "task_id": "t1",
        "index": 1,
        "trigger": "initial",
        "prompt": "p",
        "state": AttemptState.RUNNING,
        "finish_reason": None,
        "final_output": None,
        "validation_status": None,
        "validation_score": None,
        "validation_outcome": None,
        "packet": None,
        "started_at": NOW,
        "finished_at": None,
    }
    return AttemptRecord.model_validate({**base, **over})


def test_read_only_is_one_rule() -> None:
    imported = task(read_only=True, origin="bundle:abc")
    assert not is_writable(imported) and is_writable(task())
    with pytest.raises(ReadOnlyTask, match="read-only"):
        ensure_writable(imported)
    assert issubclass(ReadOnlyTask, RefusedAction)  # callers that refuse actions catch it as before
    ensure_writable(task())


@pytest.mark.parametrize(
    ("status", "requester", "expected"),
    [
        (TaskStatus.NEEDS_REVISION, RevisionRequester.ANALYST, True),
        (TaskStatus.NEEDS_REVISION, RevisionRequester.VALIDATOR, False),
        (TaskStatus.NEEDS_REVISION, None, False),
        (TaskStatus.NEEDS_REVIEW, None, True),
        (TaskStatus.AWAITING_FEEDBACK, None, True),
        (TaskStatus.RUNNING, None, False),
        (TaskStatus.CLOSED, None, False),
    ],
)
def test_who_must_act_on_a_revision(
    status: TaskStatus, requester: RevisionRequester | None, expected: bool
) -> None:
    assert requires_user_action(task(status=status, revision_requested_by=requester)) is expected


def test_a_stopped_run_goes_to_review_only_with_an_answer() -> None:
    assert interruption(None) == (Trigger.INTERRUPTED_UNUSABLE, None)
    assert interruption(attempt(final_output="  ")) == (Trigger.INTERRUPTED_UNUSABLE, None)
    assert interruption(attempt(final_output="an answer")) == (
        Trigger.INTERRUPTED_USABLE,
        ValidationOutcome.FORCE_ACCEPTED,
    )


def test_ending_a_running_attempt_records_state_time_and_outcome() -> None:
    fields = attempt_ending(
        attempt(), AttemptState.FINISHED, ValidationOutcome.ACCEPTED, now=NOW, validation_score=0.9
    )
    assert fields == {
        "state": AttemptState.FINISHED,
        "finished_at": NOW,
        "validation_outcome": ValidationOutcome.ACCEPTED,
        "validation_score": 0.9,
    }


def test_an_interrupted_attempt_says_why_its_run_stopped() -> None:
    fields = attempt_ending(attempt(), AttemptState.INTERRUPTED, None, now=NOW)
    assert fields["finish_reason"] is FinishReason.INTERRUPTED
    # A reason already recorded (the run ended; validation was under way) is kept.
    kept = attempt_ending(attempt(finish_reason="stop"), AttemptState.INTERRUPTED, None, now=NOW)
    assert "finish_reason" not in kept


def test_an_ended_attempt_keeps_its_state_and_only_takes_the_tasks_outcome() -> None:
    cancelled = attempt(state=AttemptState.CANCELLED, finished_at=NOW, final_output="x")
    fields = attempt_ending(cancelled, AttemptState.INTERRUPTED, ValidationOutcome.FORCE_ACCEPTED)
    assert fields == {"validation_outcome": ValidationOutcome.FORCE_ACCEPTED}


@pytest.mark.parametrize("status", list(ValidationStatus))
@pytest.mark.parametrize("skipped", [False, True])
def test_a_truncated_answer_always_waits_for_review(status: ValidationStatus, skipped: bool) -> None:
    d = decide(status=status, skipped=skipped, validations_done=1, max_validations=3, truncated=True)
    assert d.trigger is Trigger.VERDICT_UNCONFIRMED and not d.retry
    assert d.outcome is ValidationOutcome.FORCE_ACCEPTED and "cut off" in d.reason
