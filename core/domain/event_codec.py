"""The one codec for event payloads: the table from kind to model, encode for writers, decode for readers.

Writers build a model from ``core.domain.event_payloads`` and store ``encode(model)`` (or the
store's ``new_event(model)``); readers ``decode(record)`` (dispatch on the kind) or, having filtered
by kind already, ``decode_as(record, Model)``. SQL that reads payload JSON inside the database
names its keys with ``payload_key``, so renaming a field fails at import instead of silently.

An event of a kind this version does not know (a workspace or bundle from a newer version) decodes
to ``UnknownPayload`` holding every key, rather than raising: the store accepts any kind, and a
reader that does not know a kind has nothing to do with it anyway. A known kind whose payload
cannot be read as its model (a damaged row) raises ``EventPayloadError`` naming the event.

The desk reads a validation row through ``readable_debug(record)`` (``.strategy``,
``.chunk_count``, ``.downgraded_from``; None for a row that does not read) and
``validation_verdict(record)``; warnings come from the row's JSON (``read_warnings``). Events
are read through ``decode``/``decode_as``; the raw dicts stay on the records for the Debug tab's
JSON and for export.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from core.domain.event_payloads import (
    AddedMessage,
    AnalystDecision,
    AnalystJudgement,
    AnalystVerdictRecord,
    CitationMark,
    ClaimAssignment,
    ClaimRelease,
    ClaimTakeover,
    EventPayload,
    FinalizationRequest,
    LlmCallFailure,
    LlmRequestSnapshot,
    LlmResponse,
    ModelCallsRecord,
    PayloadPart,
    RunEnd,
    RunInterruption,
    RunStart,
    SchemaCheckFailure,
    SchemaRepair,
    SchemaUnsatisfied,
    SecondReviewRequest,
    ShadowVerdict,
    StatusChange,
    SuppliedAnswerRecord,
    TaskInterruption,
    TeamPlanFallback,
    ToolCallStart,
    ToolResultRecord,
    UnknownPayload,
    ValidationDebug,
    ValidationSkip,
    ValidationSnapshot,
    ValidatorPromotion,
    ValidatorTemplateSave,
)
from core.domain.facts import EventKind
from core.domain.records import EventRecord, ValidationRecord
from core.domain.validation import ValidationResult
from core.errors import EvidenceDeskError

PAYLOAD_MODELS: Mapping[EventKind, type[EventPayload]] = {
    EventKind.RUN_STARTED: RunStart,
    EventKind.ANALYST_JUDGEMENT_RECORDED: AnalystJudgement,
    EventKind.SECOND_REVIEW_REQUESTED: SecondReviewRequest,
    EventKind.CITATION_MARKED: CitationMark,
    EventKind.LLM_REQUEST_SNAPSHOTTED: LlmRequestSnapshot,
    EventKind.LLM_RESPONSE_RECEIVED: LlmResponse,
    EventKind.LLM_CALL_FAILED: LlmCallFailure,
    EventKind.TOOL_CALL_STARTED: ToolCallStart,
    EventKind.TOOL_RESULT_RECORDED: ToolResultRecord,
    EventKind.FINALIZATION_REQUESTED: FinalizationRequest,
    EventKind.MESSAGE_ADDED: AddedMessage,
    EventKind.RUN_FINISHED: RunEnd,
    EventKind.RUN_INTERRUPTED: RunInterruption,
    EventKind.TASK_STATUS_CHANGED: StatusChange,
    EventKind.TASK_INTERRUPTED: TaskInterruption,
    EventKind.TASK_VALIDATION_SNAPSHOTTED: ValidationSnapshot,
    EventKind.VALIDATION_SKIPPED: ValidationSkip,
    EventKind.OUTPUT_SCHEMA_VALIDATION_FAILED: SchemaCheckFailure,
    EventKind.OUTPUT_SCHEMA_REPAIRED: SchemaRepair,
    EventKind.OUTPUT_SCHEMA_UNSATISFIED: SchemaUnsatisfied,
    EventKind.TEAM_PLAN_FALLBACK: TeamPlanFallback,
    EventKind.ANALYST_FEEDBACK_RECORDED: AnalystDecision,
    EventKind.CLAIM_RELEASED: ClaimRelease,
    EventKind.CLAIM_TAKEN_OVER: ClaimTakeover,
    EventKind.CLAIM_ASSIGNED: ClaimAssignment,
    EventKind.ANALYST_VERDICT_RECORDED: AnalystVerdictRecord,
    EventKind.ANSWER_SUPPLIED: SuppliedAnswerRecord,
    EventKind.MODEL_CALLS_RECORDED: ModelCallsRecord,
    EventKind.SHADOW_VERDICT_RECORDED: ShadowVerdict,
    EventKind.VALIDATOR_PROMOTED: ValidatorPromotion,
    EventKind.VALIDATOR_TEMPLATE_SAVED: ValidatorTemplateSave,
}
"""The one table from event kind to the model of its payload."""

_KIND_OF: dict[type[EventPayload], EventKind] = {model: kind for kind, model in PAYLOAD_MODELS.items()}

P = TypeVar("P", bound=EventPayload)


class EventPayloadError(EvidenceDeskError, ValueError):
    """A stored payload that does not read as its kind's model, or a model that has no kind.

    A product error (the command line says it in one line, exit 4, naming the event), not a bug:
    a workspace or bundle can hold a payload damaged outside this program.
    """


def kind_of(model: type[EventPayload]) -> EventKind:
    """The kind whose payload ``model`` is; a model outside the table is a programming error."""
    try:
        return _KIND_OF[model]
    except KeyError:
        raise EventPayloadError(f"{model.__name__} is not the payload model of any event kind") from None


def encode(payload: EventPayload) -> tuple[EventKind, dict[str, Any]]:
    """The kind and the dict to store for a typed payload (the form ``NewEvent`` takes)."""
    return kind_of(type(payload)), payload.model_dump(by_alias=True)


def decode_payload(kind: str, payload: Mapping[str, Any]) -> EventPayload:
    """A stored payload as its kind's model; ``UnknownPayload`` for a kind this version does not know."""
    try:
        model = PAYLOAD_MODELS[EventKind(kind)]
    except ValueError:
        return UnknownPayload.model_validate(dict(payload))
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise EventPayloadError(f"a {kind} payload does not read as {model.__name__}: {exc}") from exc


def decode(record: EventRecord) -> EventPayload:
    """The typed payload of a stored event, dispatched on its kind (see ``decode_payload``)."""
    try:
        return decode_payload(str(record.kind), record.payload)
    except EventPayloadError as exc:
        raise EventPayloadError(f"event {record.id} (session {record.session_id[:8]}): {exc}") from exc


def decode_as(record: EventRecord, model: type[P]) -> P:
    """The payload of a record the caller already filtered by kind, typed as that kind's model."""
    if str(record.kind) != kind_of(model):
        raise EventPayloadError(f"event {record.id} is {record.kind!r}, not {kind_of(model).value!r}")
    decoded = decode(record)
    assert isinstance(decoded, model)
    return decoded


def read_payload(model: type[P], payload: Mapping[str, Any]) -> P:
    """A stored payload dict known to be of ``model``'s kind (a row selected by kind in SQL)."""
    decoded = decode_payload(kind_of(model), payload)
    assert isinstance(decoded, model)
    return decoded


def payload_key(model: type[PayloadPart], field: str) -> str:
    """The stored JSON key of ``model``'s ``field``, for SQL that reads payloads in the database.

    Raises at import of the module that asks, so renaming a field cannot silently leave a query
    reading a key nothing writes any more.
    """
    info = model.model_fields.get(field)
    if info is None:
        raise EventPayloadError(f"{model.__name__} has no field {field!r}")
    return info.alias or field


def validation_debug(record: ValidationRecord) -> ValidationDebug:
    """A validation row's ``debug`` as its model (rows of every version read: all fields default)."""
    return ValidationDebug.model_validate(record.debug)


def readable_debug(record: ValidationRecord) -> ValidationDebug | None:
    """The row's ``debug`` as its model, or None when it does not read (damaged, or written by a
    version with other types): a view then shows the raw JSON rather than failing on the task."""
    try:
        return validation_debug(record)
    except ValidationError:
        return None


def readable_verdict(record: ValidationRecord) -> ValidationResult | None:
    """The row's verdict as the validator's model, or None when it does not read."""
    try:
        return validation_verdict(record)
    except ValidationError:
        return None


def validation_verdict(record: ValidationRecord) -> ValidationResult:
    """A validation row's verdict (``result``) as the validator's model.

    The row's own status, score and category columns stand in for keys a ``result`` lacks (rows
    written by hand or by tools that stored only the words).
    """
    columns = {"status": record.status, "score": record.score, "category": record.category}
    return ValidationResult.model_validate({**columns, **record.result})


__all__ = [
    "PAYLOAD_MODELS",
    "EventPayloadError",
    "decode",
    "decode_as",
    "decode_payload",
    "encode",
    "kind_of",
    "payload_key",
    "read_payload",
    "readable_debug",
    "readable_verdict",
    "validation_debug",
    "validation_verdict",
]
