"""Typed facts that cross layers: event kinds, attempt and node states, finish reasons, warnings.

Each was once a string built in one layer and parsed back in another (a prefix, a substring, a
literal compared by hand). As ``StrEnum`` members they still store and serialise as the same
strings, so workspaces written before keep reading, but a reader can no longer misspell one and
mypy sees every place that handles them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class EventKind(StrEnum):
    """Every kind of session event the log holds (the ``events.kind`` column)."""

    RUN_STARTED = "run_started"
    LLM_REQUEST_SNAPSHOTTED = "llm_request_snapshotted"
    LLM_RESPONSE_RECEIVED = "llm_response_received"
    LLM_CALL_FAILED = "llm_call_failed"
    TOOL_CALL_STARTED = "tool_call_started"
    TOOL_RESULT_RECORDED = "tool_result_recorded"
    FINALIZATION_REQUESTED = "finalization_requested"
    MESSAGE_ADDED = "message_added"  # written by earlier versions; the transcript still replays it
    RUN_FINISHED = "run_finished"
    RUN_INTERRUPTED = "run_interrupted"
    TASK_STATUS_CHANGED = "task_status_changed"
    TASK_INTERRUPTED = "task_interrupted"
    TASK_VALIDATION_SNAPSHOTTED = "task_validation_snapshotted"
    VALIDATION_SKIPPED = "validation_skipped"
    OUTPUT_SCHEMA_VALIDATION_FAILED = "output_schema_validation_failed"
    OUTPUT_SCHEMA_REPAIRED = "output_schema_repaired"
    OUTPUT_SCHEMA_UNSATISFIED = "output_schema_unsatisfied"
    TEAM_PLAN_FALLBACK = "team_plan_fallback"
    ANALYST_FEEDBACK_RECORDED = "analyst_feedback_recorded"
    CLAIM_RELEASED = "claim_released"  # a reviewer let go of a task (core/tasks/claims.py)
    CLAIM_TAKEN_OVER = "claim_taken_over"  # a reviewer took a task someone else held, confirmed
    CLAIM_ASSIGNED = "claim_assigned"  # a task assigned to a reviewer: a long claim (core/tasks/bulk.py)
    ANALYST_VERDICT_RECORDED = "analyst_verdict_recorded"  # an override, kept beside the validator's
    ANSWER_SUPPLIED = "answer_supplied"  # a batch row's answer, validated only: no agent wrote it
    ANALYST_JUDGEMENT_RECORDED = "analyst_judgement_recorded"  # a blind first or a second review
    SECOND_REVIEW_REQUESTED = "second_review_requested"  # a decided task queued for another reviewer
    CITATION_MARKED = "citation_marked"  # an analyst marked one validator citation right or wrong
    MODEL_CALLS_RECORDED = "model_calls_recorded"  # calls outside runs and validations (planner, schema)
    SHADOW_VERDICT_RECORDED = (
        "shadow_verdict_recorded"  # a candidate validator's replayed verdict (core/judge)
    )
    VALIDATOR_PROMOTED = "validator_promoted"  # a candidate became the workspace's validator (core/judge)
    VALIDATOR_TEMPLATE_SAVED = "validator_template_saved"  # a workspace's own validator template, a version


class AttemptState(StrEnum):
    """Where an attempt's execution ended (the ``attempts.state`` column)."""

    RUNNING = "running"
    FINISHED = "finished"  # it produced an answer or provably none; the outcome says which
    FAILED = "failed"  # an unexpected error stopped it in this process
    CANCELLED = "cancelled"  # the analyst cancelled or abandoned it
    INTERRUPTED = "interrupted"  # the process running it died; crash recovery ended it

    @property
    def stopped_early(self) -> bool:
        """The attempt did not run to its own end: its evidence may be partial."""
        return self in (AttemptState.FAILED, AttemptState.CANCELLED, AttemptState.INTERRUPTED)


class RunState(StrEnum):
    """Whether a run is still going (the ``runs.state`` column); how it ended is its finish reason."""

    RUNNING = "running"
    FINISHED = "finished"


class FinishReason(StrEnum):
    """Why an agent run stopped (``runs.finish_reason`` and the ``run_finished`` event)."""

    STOP = "stop"
    MAX_TOOL_ITERATIONS_FINALIZED = "max_tool_iterations_finalized"
    MAX_TOOL_ITERATIONS_UNFINALIZED = "max_tool_iterations_unfinalized"
    CANCELLED = "cancelled"
    LLM_ERROR = "llm_error"
    EMPTY_RESPONSE = "empty_response"
    INTERRUPTED = "interrupted"
    TRUNCATED = "truncated"  # the final answer hit the output token limit (finish_reason=length)

    @property
    def usable(self) -> bool:
        """The run's last text is an answer (the tool-budget finalization writes one too).

        A truncated answer counts: it is kept and shown for review, marked as cut off, rather than
        thrown away; the task policy never lets it pass as complete.
        """
        return self in (FinishReason.STOP, FinishReason.MAX_TOOL_ITERATIONS_FINALIZED, FinishReason.TRUNCATED)


class NodeStatus(StrEnum):
    """How a team node ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    BUDGET_EXHAUSTED = "budget_exhausted"  # the tool budget ran out and no answer could be written
    SKIPPED = "skipped"

    @property
    def is_failure(self) -> bool:
        """The node did not deliver an answer it was asked for; a skipped node was never asked."""
        return self in (NodeStatus.FAILED, NodeStatus.CANCELLED, NodeStatus.BUDGET_EXHAUSTED)


class RevisionRequester(StrEnum):
    """Who asked for the next attempt: an analyst's Revise waits for no one, a validator's retry is queued."""

    ANALYST = "analyst"
    VALIDATOR = "validator"


class WarningCode(StrEnum):
    """What a verdict warning is about; the desk picks a badge by code, never by parsing text."""

    SAME_FAMILY_VALIDATOR = "same-family-validator"
    UNKNOWN_CONTEXT_WINDOW = "unknown-context-window"
    CONTEXT_OVERFLOW = "context-overflow"
    CHUNKED_VALIDATION = "chunked-validation"
    FINDINGS_MERGED = "findings-merged"
    UNVERIFIED_CITATIONS = "unverified-citations"
    PENDING_TOOL_CALLS = "pending-tool-calls"
    NO_EVIDENCE = "no-evidence"
    CITATIONS_REQUIRED = "citations-required"
    TRUNCATED_ANSWER = "truncated-answer"
    INCOHERENT_VERDICT = "incoherent-verdict"
    OTHER = "other"


class VerdictWarning(BaseModel):
    """One structured warning on a verdict: a code to act on, a count where one applies, and words."""

    model_config = ConfigDict(frozen=True)

    code: WarningCode
    message: str
    count: int | None = None  # e.g. unverified citations, or chunks in a chunked validation
    total: int | None = None  # the count's denominator, where it has one


# Open vocabularies: the store accepts any event kind, and evidence built by earlier versions (or
# hand-written test packets) may carry a finish reason this version does not know. A known value
# reads back as the enum member; an unknown one stays text instead of making the record unreadable.
EventKindOrText = Annotated[EventKind | str, Field(union_mode="left_to_right")]
FinishReasonOrText = Annotated[FinishReason | str, Field(union_mode="left_to_right")]


__all__ = [
    "AttemptState",
    "EventKind",
    "EventKindOrText",
    "FinishReason",
    "FinishReasonOrText",
    "NodeStatus",
    "RevisionRequester",
    "RunState",
    "VerdictWarning",
    "WarningCode",
]
