"""Plain pydantic views of stored rows: what crosses from the store to services, CLI and desk."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from core.domain.facts import (
    AttemptState,
    EventKindOrText,
    FinishReasonOrText,
    RevisionRequester,
    RunState,
)
from core.domain.status import TaskStatus, ValidationOutcome


def _aware(v: Any) -> Any:
    # SQLite hands back naive datetimes; everything we store is UTC.
    if isinstance(v, datetime) and v.tzinfo is None:
        return v.replace(tzinfo=UTC)
    return v


class _Record(BaseModel):
    model_config = ConfigDict(from_attributes=True, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _utc(cls, v: Any) -> Any:
        return _aware(v)


class TaskRecord(_Record):
    id: str
    title: str
    text: str
    status: TaskStatus
    validation_outcome: ValidationOutcome | None
    team_spec: str | None
    output_schema: dict[str, Any] | None
    main_session_id: str | None
    attempt_count: int
    latest_validation_status: str | None
    latest_score: float | None
    latest_category: str | None
    revision_requested_by: RevisionRequester | None
    read_only: bool
    origin: str | None
    runner: str | None
    heartbeat_at: datetime | None
    version: int
    created_at: datetime
    updated_at: datetime


class AttemptRecord(_Record):
    id: str
    task_id: str
    index: int
    trigger: str
    prompt: str
    state: AttemptState  # written by whatever ended the attempt, with its outcome
    finish_reason: FinishReasonOrText | None
    final_output: str | None
    validation_status: str | None
    validation_score: float | None
    validation_outcome: ValidationOutcome | None
    packet: dict[str, Any] | None
    started_at: datetime
    finished_at: datetime | None


class SessionRecord(_Record):
    id: str
    task_id: str | None
    parent_session_id: str | None
    kind: str
    label: str
    created_at: datetime


class RunRecord(_Record):
    id: str
    session_id: str
    task_id: str | None
    attempt_id: str | None
    kind: str
    node_id: str | None
    model: str
    state: RunState
    finish_reason: FinishReasonOrText | None
    output_text: str | None
    started_at: datetime
    finished_at: datetime | None


class EventRecord(_Record):
    id: int
    session_id: str
    run_id: str | None
    task_id: str | None
    seq: int
    kind: EventKindOrText
    payload: dict[str, Any]
    content: str | None
    created_at: datetime


class ValidationRecord(_Record):
    id: str
    task_id: str
    attempt_id: str
    attempt_index: int
    status: str
    score: float
    category: str
    result: dict[str, Any]
    raw_response: str
    prompt: str | None
    debug: dict[str, Any]
    created_at: datetime


class FeedbackRecord(_Record):
    id: str
    task_id: str
    attempt_id: str | None
    action: str
    prompt: str | None
    note: str | None
    reviewer: str
    from_status: str
    to_status: str
    created_at: datetime
    reason: str | None = None  # a reason code of the workspace taxonomy (core/domain/reasons.py)
