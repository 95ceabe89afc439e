"""What each kind of event records: one pydantic model per ``EventKind`` (the codec is ``event_codec``).

Payloads were dicts built at ~24 write sites and read back by key in a dozen modules, so a renamed
key or a value of the wrong type surfaced (if at all) as a ``None`` far from where it was written.
Each kind now has a model here; writers build it and ``encode`` it, readers ``decode`` a stored
record into it. ``core.domain.event_codec.PAYLOAD_MODELS`` is the one table from kind to model.

Three rules keep the log readable across versions:

- **Fields have defaults.** The log holds payloads from every earlier version, which may lack keys
  added since; the default is what readers assumed for a missing key before the models existed.
  The few required fields are keys every version wrote and without which the event means nothing
  (an analyst verdict's status, a tool call's id).
- **Unknown keys are kept** (``extra="allow"``): a payload written by a later version, or a key no
  longer written, survives ``decode`` and is dumped again by ``encode``. Stored payloads are never
  rewritten from a model: audit, export and verify hash what the row holds.
- **The JSON written is what the dicts wrote.** Fields are declared in the order the writers put
  their keys, and a key a writer used to leave out when it had nothing to say (``next_prompt``,
  ``undoes``, ``budget``...) is still left out when it is ``None`` (``omitted_when_none``). Values are
  dumped in Python mode, so enums reach the JSON column as the same strings as before.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from core.domain.content import ContentRef
from core.domain.facts import FinishReasonOrText, VerdictWarning
from core.domain.status import TaskStatus, ValidationOutcome, ValidationStatus
from core.domain.validation import FailureCategory, ValidationResult

# Times in payloads were always written as ``datetime.isoformat()`` text; pydantic's own JSON form
# spells UTC as "Z", which would change the stored text of every new event.
IsoTime = Annotated[datetime, PlainSerializer(lambda d: d.isoformat(), return_type=str)]
# Token counts: a missing or null count (older rows, providers that report none) reads as zero.
Count = Annotated[int, BeforeValidator(lambda v: 0 if v is None else v)]
Cost = Annotated[float, BeforeValidator(lambda v: 0.0 if v is None else v)]


class PayloadPart(BaseModel):
    """Common configuration of payloads and their nested parts.

    ``extra="allow"`` keeps keys this version does not know; ``defer_build`` keeps importing the
    module cheap (the desk imports the store before its first paint), each schema being built on
    its first use.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True, defer_build=True)

    omitted_when_none: ClassVar[frozenset[str]] = frozenset()
    """Fields that writers left out of the dict when they had no value: still left out, not null.
    A class names its own; those of the classes it derives from apply too (``_omitted``)."""

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for key, name in _omitted_keys(type(self)):
                if key in data and data[key] is None:
                    del data[key]
                elif name in data and data[name] is None:
                    del data[name]
        return data


class EventPayload(PayloadPart):
    """A payload of one event kind. ``content_ref`` is the store's, on any kind, never a writer's."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"content_ref"})

    content_ref: ContentRef | None = None
    """Set by the store when the event's content went to the chunk store; the text is read from there."""

    @property
    def extras(self) -> dict[str, Any]:
        """Keys of the stored payload this version has no field for (kept for audit and export)."""
        return dict(self.model_extra or {})


# --------------------------------------------------------------------------- nested parts
class TokenUsage(PayloadPart):
    """What a model call cost, as the gateway reported it; task budgets and reports sum these."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"total_tokens", "unpriced_calls"})

    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    total_tokens: int | None = None  # the gateway reports it; the validator's summed usage does not
    cost_usd: Cost = 0.0
    # Of the calls summed here, those whose model had no known price (their cost is unknown, not 0);
    # None in usage written before prices were told apart from their absence.
    unpriced_calls: int | None = None


# A response or validation whose usage was recorded as null (older rows, a provider that reported
# none) reads as zero usage; the call itself still counts.
RecordedUsage = Annotated[TokenUsage, BeforeValidator(lambda v: {} if v is None else v)]


class RecordedToolCall(PayloadPart):
    """A tool call as the model asked for it; the transcript replays it to the next model call."""

    id: str
    name: str
    arguments: str  # the JSON text exactly as the model wrote it: parsing is the tool layer's job


class SuppliedProvenance(PayloadPart):
    """Where a supplied answer came from, so a verdict on it is traced to its batch row, not an agent."""

    source: str = "batch"
    batch_id: str | None = None
    row_key: str | None = None


# --------------------------------------------------------------------------- the agent's run
class RunStart(EventPayload):
    """A run began: enough to rebuild its transcript from events alone and to tie it to an attempt."""

    model: str = ""
    run_kind: str = "agent"
    node_id: str | None = None  # set for a team node's run: evidence tells node runs from the main run
    attempt_id: str | None = None  # which attempt's evidence (and spend) the run belongs to
    max_tool_iterations: int = 0
    include_tools: bool = True
    tool_names: list[str] = Field(default_factory=list)
    input_messages: list[dict[str, Any]] = Field(default_factory=list)  # what this run added to the chat
    history_length: int = 0  # messages the session already held, so a replay can check it saw them all


class LlmRequestSnapshot(EventPayload):
    """The shape of a request (sizes, limits, tools), compact by default; never a source of evidence."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"full_request"})

    iteration: int = 0
    provider: str = ""
    model: str = ""
    message_count: int = 0
    tool_names: list[str] = Field(default_factory=list)
    message_chars: int = 0
    tool_schema_chars: int = 0
    max_tokens: int | None = None
    temperature: float | None = None
    thinking: bool = False
    full_request: bool | None = None  # True: the scrubbed full request is in the event's content


class LlmResponse(EventPayload):
    """A model's answer to one turn: the transcript, the tool calls it asked for and what it cost."""

    iteration: int = 0
    content: str | None = None
    tool_calls: list[RecordedToolCall] = Field(default_factory=list)
    finish_reason: str | None = None  # the provider's word ("stop", "length", "tool_calls")
    usage: RecordedUsage = Field(default_factory=TokenUsage)
    latency_s: float = 0.0
    model: str | None = None  # the model that answered, which a router may have chosen


class LlmCallFailure(EventPayload):
    """A model call that gave no usable turn: the log says why the run stopped or retried."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"usage", "retry_max_tokens"})

    iteration: int = 0
    kind: str = ""  # the gateway's error kind, or "truncated" for a turn cut off and retried
    error: str = ""
    usage: TokenUsage | None = None  # a truncated turn was still paid for
    retry_max_tokens: int | None = None  # the larger limit the retried turn asks for


class ToolCallStart(EventPayload):
    """A tool call about to run. The agent loop no longer writes it; logs that hold it still read.

    It repeated what the turn's ``llm_response_received`` lists (name, id, arguments), in the same
    commit, and was written even for calls that never ran (a reply cut off twice, a refused final
    reply). The response's ``tool_calls`` and each ``tool_result_recorded`` say what was asked and
    what ran; a crash between the two shows as calls without results.
    """

    iteration: int = 0
    tool_name: str = ""
    tool_call_id: str | None = None
    arguments: str = ""


class ToolResultRecord(EventPayload):
    """A tool's result: its text is the event's content (the evidence), these are its facts."""

    iteration: int = 0
    tool_name: str = ""
    tool_call_id: str | None = None
    is_error: bool = False  # an error is evidence too: the validator sees that the tool failed
    url: str | None = None
    title: str | None = None
    content_chars: int = 0
    data: dict[str, Any] | None = None  # the tool's structured extras (search hits, document ids)


class FinalizationRequest(EventPayload):
    """The no-tools instruction that made the model answer from what it had; replayed as a message."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"budget", "refused"})

    iteration: int = 0
    message: dict[str, Any] = Field(default_factory=dict)
    budget: str | None = None  # the task budget (cost, tokens) that ran out, when not the tool budget
    refused: str | None = None  # why the previous final reply was refused (this is the firmer ask)


class AddedMessage(EventPayload):
    """A chat message added outside a model turn, replayed by the transcript in its place.

    Earlier versions wrote one per message; now only a supplied answer (a batch row's) does.
    """

    message: dict[str, Any] = Field(default_factory=dict)


class RunEnd(EventPayload):
    """How a run ended; written by whatever ended it, so no reader has to reconstruct it."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"supplied", "tools_ignored"})

    finish_reason: FinishReasonOrText = ""  # text when a later version ended it for a new reason
    output_text: str = ""
    error: str | None = None
    pending_tool_calls: bool = False  # the model still asked for tools: the answer is unfinished
    iterations: int = 0
    warnings: list[str] = Field(default_factory=list)
    supplied: SuppliedProvenance | None = None  # a batch row's answer stood in for the agent
    # True when the run was offered tools, the task had a corpus to search, and the model called
    # none (a server that ignores ``tools``): the answer rests on no gathered evidence.
    tools_ignored: bool | None = None


class RunInterruption(EventPayload):
    """Recovery or a job queue ended a run whose process died; its evidence may be partial."""

    message: str = "the run was interrupted"
    runner: str | None = None


# --------------------------------------------------------------------------- the task's moves
class StatusChange(EventPayload):
    """A move through the state machine, written in the transaction that makes it."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"runner", "next_prompt"})

    from_status: TaskStatus | None = Field(default=None, alias="from")
    to_status: TaskStatus | None = Field(default=None, alias="to")
    trigger: str = ""
    attempt_index: int | None = None
    reason: str = ""
    runner: str | None = None  # the dead worker whose job was queued again (a resume)
    # The task's outcome after the move (None: no answer judged); text if a later version adds one.
    validation_outcome: Annotated[ValidationOutcome | str, Field(union_mode="left_to_right")] | None = None
    next_prompt: str | None = None  # the next attempt's prompt: a queued retry survives a crash


class TaskInterruption(EventPayload):
    """Crash recovery moved a task whose runner died; the attempt it was on ends interrupted."""

    from_status: TaskStatus | None = Field(default=None, alias="from")
    to_status: TaskStatus | None = Field(default=None, alias="to")
    runner: str | None = None
    attempt_index: int | None = None
    message: str = ""


class AnalystDecision(EventPayload):
    """An analyst's satisfied, revise, abandon, reopen or undo, with what undo needs to reverse it."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"undoes", "reason"})

    reviewer: str = ""
    time: IsoTime | None = None
    action: str = ""  # a FeedbackAction, or "reopen" / "undo"
    prompt: str | None = None  # a revise's prompt: the next attempt's message
    note: str | None = None
    from_status: TaskStatus | None = Field(default=None, alias="from")
    to_status: TaskStatus | None = Field(default=None, alias="to")
    trigger: str = ""
    version_after: int | None = None  # undo checks nobody acted since; older decisions lack it
    revision_requested_by_before: str | None = None  # what undo puts back
    undoes: dict[str, Any] | None = None  # the decision an undo reverses: event_id, action, reviewer
    reason: str | None = None  # a reason code of the workspace taxonomy (core/domain/reasons.py)


# --------------------------------------------------------------------------- validation
class ValidationDebug(PayloadPart):
    """How a verdict was reached: the evidence measured, the strategy, the calls and what they cost.

    Stored as the validation row's ``debug`` and spread into the ``task_validation_snapshotted``
    payload. The desk's validator view and the reports read it; calibration's SQL reads
    ``validator_model`` and ``warnings`` from it.
    """

    omitted_when_none: ClassVar[frozenset[str]] = frozenset(
        {
            "downgraded_from",
            "coherence_failures",
            "prompt_budget",
            "reply_reserve",
            "structured_contract",
            "contract_fallbacks",
            "validator_version",
            "validator",
        }
    )

    evidence_run_ids: list[str] = Field(default_factory=list)
    evidence_session_ids: list[str] = Field(default_factory=list)
    tool_result_count: int = 0
    evidence_attempts: list[int] = Field(default_factory=list)  # attempts whose evidence was judged
    evidence_chars: int = 0
    evidence_item_count: int = 0
    final_output_chars: int = 0
    validator_model: str | None = None
    # Who judged (``core.validation.identity``): the short id calibration groups by, and what it is
    # made of (profile, template digests, policy settings, product version). None before versions.
    validator_version: str | None = None
    validator: dict[str, Any] | None = None
    agent_model: str | None = None  # same family as the validator earns a warning
    validation_mode: str = ""
    citation_checks: dict[str, int] = Field(default_factory=dict)  # CitationCheck value -> count
    downgraded_from: str | None = None  # "accepted" when no citation could be verified, or it was incoherent
    coherence_failures: list[str] | None = None  # the CoherenceCheck values an acceptance failed
    strategy: str = ""  # single, chunked, pre-check, skipped, error
    chunk_count: int = 0
    prompt_tokens: int = 0  # estimated size of the prompt (of the largest chunk when chunked)
    verdict_prompt_tokens: int | None = None
    prompt_budget: int | None = None  # input tokens the judge's window left for the prompt
    reply_reserve: int | None = None  # tokens kept for the verdict: the validator profile's max_tokens
    evidence_chars_in_input: int = 0
    coverage: float = 1.0  # share of the gathered evidence the validator saw
    schema_retries: int = 0
    llm_calls: int = 0  # the validator's calls: task spend counts them beside the agent's turns
    usage: RecordedUsage = Field(default_factory=TokenUsage)
    model_used: str | None = None
    # How the judge's JSON was asked for: json_schema, json_object or prompt_only, negotiated per
    # endpoint (``core.llm.contract``), and each refusal that moved it down a rung.
    # Left out when no judge call asked for JSON (a pre-check, a skip) and when nothing was refused.
    structured_contract: str | None = None
    contract_fallbacks: list[str] | None = None
    error: str | None = None
    latency_s: float = 0.0
    # Structured warnings; strings from the version before them, dicts with a code from a later one.
    # ``core.validation.warnings.read_warnings`` turns all three into ``VerdictWarning``.
    warnings: list[Annotated[VerdictWarning | str | dict[str, Any], Field(union_mode="left_to_right")]] = (
        Field(default_factory=list)
    )
    skipped: bool = False  # the policy skipped the validator: no validation row was written
    attempt_id: str | None = None
    chunk_raw_responses: list[str] = Field(default_factory=list)
    context_overflow: dict[str, Any] | None = None
    chunk_ranges: list[list[tuple[str, int, int]]] = Field(default_factory=list)
    findings_fold: list[dict[str, Any]] = Field(default_factory=list)
    evidence_index_summarised: bool = False


class ValidationSnapshot(ValidationDebug, EventPayload):
    """A verdict and how it was reached, in the task's log (skipped validations included)."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"node_id"})

    result: ValidationResult | None = None
    status: ValidationStatus | None = None
    attempt_index: int | None = None
    raw_response: str = ""
    prompt_stored: bool = False  # the validator's prompt is the event's content (a debug setting)
    node_id: str | None = None  # a team node's output, judged before the synthesis (no validation row)


class ValidationSkip(EventPayload):
    """Declared since the first version and written by none that shipped: a skipped validation is
    a ``ValidationSnapshot`` with ``skipped``. Kept so a log that holds one still reads."""

    reason: str = ""


class SchemaCheckFailure(EventPayload):
    """A reply that did not match the requested JSON schema (planner, final answer or validator)."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset(
        {"raw_output", "raw_output_chars", "attempt_index"}
    )

    stage: str = ""  # parse, schema-validate, ...
    attempt: int = 0  # 1-based reply number within the whole request
    retries: int = 0
    message: str = ""
    raw_output: str | None = None  # inline for the planner and the final answer
    model: str = ""
    path: str | None = None  # where in the JSON the first error is; None for a parse error
    tier: int = 1
    raw_output_chars: int | None = None  # the validator's raw output is the event's content instead
    purpose: str = ""  # planner, final-answer, validation:<purpose>
    attempt_index: int | None = None


class SchemaRepair(EventPayload):
    """A re-asked answer matched the schema and becomes the session's answer in the transcript."""

    retries: int = 0
    attempts: int = 0
    tier: int = 1
    model: str | None = None
    output_text: str | None = None  # the accepted reply, replayed in place of the rejected one


class SchemaUnsatisfied(EventPayload):
    """No reply matched the schema: the agent's own answer is kept, marked as not matching."""

    status: str = ""
    error: str | None = None
    attempts: int = 0
    tier: int = 3


class ModelCallsRecord(EventPayload):
    """Answered model calls made outside any agent run or validation: the planner's, an output
    schema's re-asks. Written once per such step so every answered call is counted once in the
    attempt's and the task's totals (``core.domain.usage``)."""

    purpose: str = ""  # "planner" or "output-schema"
    role: str = ""  # the ModelRole of the first call
    model: str | None = None
    attempt_id: str | None = None
    calls: int = 0
    usage: RecordedUsage = Field(default_factory=TokenUsage)


class TeamPlanFallback(EventPayload):
    """The planner gave no usable team plan, so the task runs as a single agent; the words say why."""

    warnings: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- people
class ClaimRelease(EventPayload):
    """A reviewer let go of a task."""

    reviewer: str = ""
    time: IsoTime | None = None


class ClaimTakeover(EventPayload):
    """A reviewer took a task someone else held, after confirming: whose claim was broken is kept."""

    reviewer: str = ""
    from_reviewer: str | None = None
    from_expires_at: IsoTime | None = None
    time: IsoTime | None = None


class ClaimAssignment(EventPayload):
    """A task assigned to a reviewer: a long claim someone else (``by``) took on their behalf."""

    reviewer: str = ""
    by: str = ""
    time: IsoTime | None = None
    expires_at: IsoTime | None = None


class AnalystVerdictRecord(EventPayload):
    """An analyst's override of the validator's verdict on one attempt, kept beside it (never over it)."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"reason"})

    attempt_index: int
    attempt_id: str  # calibration's SQL joins overrides to attempts on this key
    status: ValidationStatus
    category: FailureCategory
    note: str = ""
    reviewer: str
    reason: str | None = None  # a reason code of the workspace taxonomy


class AnalystJudgement(EventPayload):
    """A judgement that does not move the task: a blind first judgement before the verdict is
    revealed (``phase`` "blind"), or an independent second review by another reviewer ("second").
    Calibration sets them beside the standing decision (anchoring, inter-analyst agreement)."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"reason", "note"})

    attempt_index: int
    attempt_id: str  # calibration's SQL reads judgements by attempt
    reviewer: str
    decision: str  # satisfied | revise | abandon
    phase: str  # blind | second
    reason: str | None = None
    note: str | None = None


class SecondReviewRequest(EventPayload):
    """A decided attempt queued for an independent, blind second review by another reviewer."""

    attempt_index: int
    attempt_id: str
    requested_by: str


class CitationMark(EventPayload):
    """An analyst's mark on one citation of a verdict: right (the quote supports what the
    validator said of it) or wrong. Calibration counts the latest mark on each citation as the
    validator's citation precision per model and version, which the payload carries (the verdict
    never changes, so neither do they) so the figures are one pass over these events."""

    omitted_when_none: ClassVar[frozenset[str]] = frozenset({"validator_model", "validator_version"})

    attempt_index: int
    attempt_id: str
    validation_id: str  # the verdict whose citation is marked
    citation: int  # its place in the verdict's citations, from 0
    evidence_id: str
    mark: str  # right | wrong
    reviewer: str
    validator_model: str | None = None
    validator_version: str | None = None


class SuppliedAnswerRecord(SuppliedProvenance, EventPayload):
    """A batch row's answer recorded as the attempt's run: validated only, no agent wrote it."""

    generated: bool = False
    note: str = ""  # the warning shown with the verdict: the answer's source, not the agent


class ShadowVerdict(ValidationSnapshot):
    """A candidate validator's verdict on a decided attempt, replayed from its stored packet.

    Written in the candidate's own shadow session with no task on the event row, so it never moves
    a task, never counts in a task's spend and is never read as the task's verdict.
    """

    candidate: str = ""
    task_id: str = ""


class ValidatorPromotion(EventPayload):
    """A candidate made the workspace's validator: who, and the comparison the choice rested on."""

    candidate: str
    validator_version: str
    previous_version: str | None = None
    reviewer: str
    profile: dict[str, Any] = Field(default_factory=dict)  # the candidate's profile: key sources by name only
    template_set: str = "installed"
    templates: dict[str, str] = Field(default_factory=dict)  # the candidate's own templates, by name
    comparison: dict[str, Any] = Field(default_factory=dict)


class ValidatorTemplateSave(EventPayload):
    """A version of a workspace's own validator template; the text is the event's content.
    ``removed``: the workspace went back to the installed template."""

    name: str
    version: int
    sha256: str | None = None
    reviewer: str = ""
    note: str = ""
    removed: bool = False


class UnknownPayload(EventPayload):
    """A payload of a kind this version does not know (a newer version wrote it): every key kept."""


__all__ = [
    "AddedMessage",
    "AnalystDecision",
    "AnalystJudgement",
    "AnalystVerdictRecord",
    "CitationMark",
    "ClaimAssignment",
    "ClaimRelease",
    "ClaimTakeover",
    "EventPayload",
    "FinalizationRequest",
    "LlmCallFailure",
    "LlmRequestSnapshot",
    "LlmResponse",
    "ModelCallsRecord",
    "PayloadPart",
    "RecordedToolCall",
    "RunEnd",
    "RunInterruption",
    "RunStart",
    "SchemaCheckFailure",
    "SchemaRepair",
    "SchemaUnsatisfied",
    "SecondReviewRequest",
    "ShadowVerdict",
    "StatusChange",
    "SuppliedAnswerRecord",
    "SuppliedProvenance",
    "TaskInterruption",
    "TeamPlanFallback",
    "TokenUsage",
    "ToolCallStart",
    "ToolResultRecord",
    "UnknownPayload",
    "ValidationDebug",
    "ValidationSkip",
    "ValidationSnapshot",
    "ValidatorPromotion",
    "ValidatorTemplateSave",
]


@functools.cache
def _omitted(cls: type[PayloadPart]) -> frozenset[str]:
    """Every field ``cls`` and the classes it derives from leave out when None, once per class."""
    found: set[str] = set()
    for klass in cls.__mro__:
        found |= klass.__dict__.get("omitted_when_none", frozenset())
    return frozenset(found)


@functools.cache
def _omitted_keys(cls: type[PayloadPart]) -> tuple[tuple[str, str], ...]:
    """``_omitted`` as (dumped key, field name) pairs, once per class: the serializer runs for every
    payload and nested part written (six per agent turn), and reading ``model_fields`` each time
    cost more than the check itself."""
    fields = cls.model_fields
    return tuple((fields[name].alias or name, name) for name in sorted(_omitted(cls)))
