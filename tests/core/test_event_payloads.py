"""Typed event payloads: one model per kind in one table, and a codec that writes what the dicts wrote.

The samples below are payloads exactly as the write sites built them as dicts before the models
existed. Decoding one and encoding it again must give the same JSON: new events store the same
text, and bundles (which hash stored payloads) verify the same way.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from core.domain.event_codec import (
    PAYLOAD_MODELS,
    EventPayloadError,
    decode,
    decode_as,
    decode_payload,
    encode,
    kind_of,
    payload_key,
    validation_debug,
    validation_verdict,
)
from core.domain.event_payloads import (
    AnalystDecision,
    AnalystVerdictRecord,
    ClaimRelease,
    EventPayload,
    LlmResponse,
    RunEnd,
    RunStart,
    StatusChange,
    TokenUsage,
    UnknownPayload,
    ValidationDebug,
    ValidationSnapshot,
)
from core.domain.facts import EventKind, FinishReason
from core.domain.records import EventRecord, ValidationRecord
from core.domain.status import TaskStatus
from core.store import new_event

REPO = Path(__file__).resolve().parents[2]
NOW = "2025-03-01T12:00:00+00:00"
USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, "cost_usd": 0.0012}
RESULT = {
    "status": "accepted",
    "score": 0.9,
    "issues": [],
    "missing_requirements": [],
    "evidence_gaps": [],
    "recommended_revision_prompt": "",
    "category": "none",
    "citations": [
        {"claim": "c", "evidence_id": "E1", "quote": "q", "verdict": "supported", "check": "verified"}
    ],
    "raw_response": "{}",
    "passed": True,
}
DEBUG: dict[str, Any] = {
    "evidence_run_ids": ["r1"],
    "evidence_session_ids": ["s1"],
    "tool_result_count": 2,
    "evidence_attempts": [1],
    "evidence_chars": 900,
    "evidence_item_count": 3,
    "final_output_chars": 40,
    "validator_model": "scripted/validator",
    "agent_model": "scripted/agent",
    "validation_mode": "always",
    "citation_checks": {"unchecked": 0, "verified": 1, "quote_not_found": 0, "unknown_id": 0},
    "strategy": "single",
    "chunk_count": 1,
    "prompt_tokens": 800,
    "verdict_prompt_tokens": None,
    "evidence_chars_in_input": 900,
    "coverage": 1.0,
    "schema_retries": 0,
    "llm_calls": 1,
    "usage": {"prompt_tokens": 800, "completion_tokens": 50, "cost_usd": 0.0},
    "model_used": "scripted/validator",
    "error": None,
    "latency_s": 0.0123,
    "warnings": [{"code": "chunked-validation", "message": "2 chunks", "count": 2, "total": None}],
    "skipped": False,
    "attempt_id": "a1",
    "chunk_raw_responses": [],
    "context_overflow": None,
    "chunk_ranges": [[["E1", 0, 10]]],
    "findings_fold": [],
    "evidence_index_summarised": False,
}

# One payload per kind, as its writer built it (keys in the writer's order).
SAMPLES: dict[EventKind, dict[str, Any]] = {
    EventKind.RUN_STARTED: {
        "model": "scripted/agent",
        "run_kind": "agent",
        "node_id": None,
        "attempt_id": "a1",
        "max_tool_iterations": 4,
        "include_tools": True,
        "tool_names": ["search_corpus"],
        "input_messages": [{"role": "user", "content": "Everest?"}],
        "history_length": 0,
    },
    EventKind.LLM_REQUEST_SNAPSHOTTED: {
        "iteration": 1,
        "provider": "scripted",
        "model": "scripted/agent",
        "message_count": 2,
        "tool_names": [],
        "message_chars": 80,
        "tool_schema_chars": 0,
        "max_tokens": None,
        "temperature": 0.2,
        "thinking": False,
        "full_request": True,
    },
    EventKind.LLM_RESPONSE_RECEIVED: {
        "iteration": 1,
        "content": None,
        "tool_calls": [{"id": "c1", "name": "search_corpus", "arguments": '{"q": "Everest"}'}],
        "finish_reason": "tool_calls",
        "usage": USAGE,
        "latency_s": 0.5,
        "model": "scripted/agent",
    },
    EventKind.LLM_CALL_FAILED: {
        "iteration": 2,
        "kind": "truncated",
        "error": "cut off",
        "usage": USAGE,
        "retry_max_tokens": 2048,
    },
    EventKind.TOOL_CALL_STARTED: {
        "iteration": 1,
        "tool_name": "search_corpus",
        "tool_call_id": "c1",
        "arguments": '{"q": "Everest"}',
    },
    EventKind.TOOL_RESULT_RECORDED: {
        "iteration": 1,
        "tool_name": "search_corpus",
        "tool_call_id": "c1",
        "is_error": False,
        "url": None,
        "title": "Everest",
        "content_chars": 12,
        "data": {"hits": 1},
    },
    EventKind.FINALIZATION_REQUESTED: {
        "iteration": 4,
        "message": {"role": "user", "content": "answer now"},
        "budget": "cost",
    },
    EventKind.MESSAGE_ADDED: {"message": {"role": "assistant", "content": "8,849 m"}},
    EventKind.RUN_FINISHED: {
        "finish_reason": "stop",
        "output_text": "8,849 m",
        "error": None,
        "pending_tool_calls": False,
        "iterations": 0,
        "warnings": ["supplied"],
        "supplied": {"source": "batch", "batch_id": "b1", "row_key": "7"},
    },
    EventKind.RUN_INTERRUPTED: {"message": "the process running this run stopped", "runner": "host:1"},
    EventKind.TASK_STATUS_CHANGED: {
        "from": "needs_revision",
        "to": "running",
        "trigger": "interrupted_resume",
        "attempt_index": 2,
        "reason": "worker died",
        "runner": "host:1",
        "validation_outcome": None,
        "next_prompt": "try again",
    },
    EventKind.TASK_INTERRUPTED: {
        "from": "running",
        "to": "needs_review",
        "runner": "host:1",
        "attempt_index": 1,
        "message": "recovered at start-up",
    },
    EventKind.TASK_VALIDATION_SNAPSHOTTED: {
        **DEBUG,
        "result": RESULT,
        "status": "accepted",
        "attempt_index": 1,
        "raw_response": "{}",
        "prompt_stored": False,
    },
    EventKind.VALIDATION_SKIPPED: {"reason": "policy"},
    EventKind.OUTPUT_SCHEMA_VALIDATION_FAILED: {
        "stage": "schema-validate",
        "attempt": 1,
        "retries": 0,
        "message": "missing 'height'",
        "model": "scripted/validator",
        "path": "height",
        "tier": 1,
        "raw_output_chars": 42,
        "purpose": "validation:verdict",
        "attempt_index": 1,
    },
    EventKind.OUTPUT_SCHEMA_REPAIRED: {
        "retries": 1,
        "attempts": 2,
        "tier": 1,
        "model": "scripted/agent",
        "output_text": '{"height": 8849}',
    },
    EventKind.OUTPUT_SCHEMA_UNSATISFIED: {"status": "failed", "error": "no match", "attempts": 3, "tier": 3},
    EventKind.TEAM_PLAN_FALLBACK: {"warnings": ["planner returned nothing"]},
    EventKind.ANALYST_FEEDBACK_RECORDED: {
        "reviewer": "ana",
        "time": NOW,
        "action": "undo",
        "prompt": None,
        "note": "oops",
        "from": "closed",
        "to": "awaiting_feedback",
        "trigger": "undo_closed",
        "version_after": 7,
        "revision_requested_by_before": None,
        "undoes": {"event_id": 12, "action": "satisfied", "reviewer": "ana"},
    },
    EventKind.CLAIM_RELEASED: {"reviewer": "ana", "time": NOW},
    EventKind.CLAIM_TAKEN_OVER: {
        "reviewer": "bo",
        "from_reviewer": "ana",
        "from_expires_at": NOW,
        "time": NOW,
    },
    EventKind.CLAIM_ASSIGNED: {"reviewer": "bo", "by": "ana", "time": NOW, "expires_at": NOW},
    EventKind.ANALYST_VERDICT_RECORDED: {
        "attempt_index": 1,
        "attempt_id": "a1",
        "status": "rejected",
        "category": "incomplete",
        "note": "missing the source",
        "reviewer": "ana",
    },
    EventKind.ANALYST_JUDGEMENT_RECORDED: {
        "attempt_index": 1,
        "attempt_id": "a1",
        "reviewer": "bob",
        "decision": "abandon",
        "phase": "second",
        "reason": "wrong_fact",
    },
    EventKind.SECOND_REVIEW_REQUESTED: {"attempt_index": 1, "attempt_id": "a1", "requested_by": "ana"},
    EventKind.CITATION_MARKED: {
        "attempt_index": 1,
        "attempt_id": "a1",
        "validation_id": "v1",
        "citation": 0,
        "evidence_id": "E1",
        "mark": "right",
        "reviewer": "ana",
        "validator_model": "judge",
        "validator_version": "abc123",
    },
    EventKind.ANSWER_SUPPLIED: {
        "source": "batch",
        "batch_id": "b1",
        "row_key": "7",
        "generated": False,
        "note": "answer supplied by batch b1",
    },
    EventKind.MODEL_CALLS_RECORDED: {
        "purpose": "planner",
        "role": "planner",
        "model": "openai/planner",
        "attempt_id": "a1",
        "calls": 2,
        "usage": {"prompt_tokens": 22, "completion_tokens": 14, "cost_usd": 0.0, "unpriced_calls": 2},
    },
    EventKind.SHADOW_VERDICT_RECORDED: {
        **{  # the validator's identity sits right after its model, where the writer puts it
            k: v
            for key, value in DEBUG.items()
            for k, v in (
                [(key, value), ("validator_version", "0123456789ab"), ("validator", {"model": "m"})]
                if key == "validator_model"
                else [(key, value)]
            )
        },
        "result": RESULT,
        "status": "accepted",
        "attempt_index": 1,
        "raw_response": "{}",
        "prompt_stored": False,
        "candidate": "strict",
        "task_id": "t1",
    },
    EventKind.VALIDATOR_PROMOTED: {
        "candidate": "strict",
        "validator_version": "0123456789ab",
        "previous_version": "ba9876543210",
        "reviewer": "ana",
        "profile": {"model": "scripted/candidate"},
        "template_set": "installed",
        "templates": {},
        "comparison": {"paired": 40},
    },
    EventKind.VALIDATOR_TEMPLATE_SAVED: {
        "name": "validation_rubric.md.j2",
        "version": 2,
        "sha256": "ab" * 32,
        "reviewer": "ana",
        "note": "stricter on dates",
        "removed": False,
    },
}


def stored_json(payload: dict[str, Any]) -> str:
    """The text the JSON column stores (keys in order, enums as their strings)."""
    return json.dumps(payload)


def record(kind: str, payload: dict[str, Any]) -> EventRecord:
    return EventRecord(
        id=5,
        session_id="session-1",
        run_id=None,
        task_id=None,
        seq=1,
        kind=kind,
        payload=payload,
        content=None,
        created_at=datetime.now(UTC),
    )


def test_every_event_kind_has_exactly_one_payload_model() -> None:
    assert set(PAYLOAD_MODELS) == set(EventKind)
    assert len(set(PAYLOAD_MODELS.values())) == len(EventKind)
    for kind, model in PAYLOAD_MODELS.items():
        assert kind_of(model) is kind
    assert set(SAMPLES) == set(EventKind)  # every kind is exercised below


@pytest.mark.parametrize("kind", list(EventKind), ids=str)
def test_each_payload_round_trips_to_the_same_stored_json(kind: EventKind) -> None:
    sample = SAMPLES[kind]
    decoded = decode(record(kind, sample))
    assert isinstance(decoded, PAYLOAD_MODELS[kind])
    assert decoded.extras == {}  # the sample names every field the writer writes
    again_kind, again = encode(decoded)
    assert again_kind is kind
    assert stored_json(again) == stored_json(sample)
    assert decode_payload(kind, again) == decoded


def test_a_writer_leaves_out_what_it_used_to_leave_out() -> None:
    moved = StatusChange(
        from_status=TaskStatus.OPEN, to_status=TaskStatus.RUNNING, trigger="start", attempt_index=1
    )
    _, payload = encode(moved)
    assert list(payload) == ["from", "to", "trigger", "attempt_index", "reason", "validation_outcome"]
    _, usage = encode(ValidationSnapshot(usage=TokenUsage(prompt_tokens=1)))
    assert usage["usage"] == {"prompt_tokens": 1, "completion_tokens": 0, "cost_usd": 0.0}
    assert "downgraded_from" not in usage and "content_ref" not in usage


def test_times_are_stored_as_isoformat_text() -> None:
    when = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    _, payload = encode(ClaimRelease(reviewer="ana", time=when))
    assert payload == {"reviewer": "ana", "time": when.isoformat()}  # "+00:00", not pydantic's "Z"


def test_an_old_payload_missing_new_keys_reads_with_defaults() -> None:
    old = decode_as(record(EventKind.RUN_FINISHED, {"finish_reason": "stop", "output_text": "x"}), RunEnd)
    assert old.finish_reason is FinishReason.STOP
    assert old.warnings == [] and old.pending_tool_calls is False and old.supplied is None
    decision = decode_as(
        record(EventKind.ANALYST_FEEDBACK_RECORDED, {"action": "satisfied"}), AnalystDecision
    )
    assert decision.version_after is None and decision.undoes is None and decision.from_status is None
    usage = decode_as(
        record(EventKind.LLM_RESPONSE_RECEIVED, {"usage": {"prompt_tokens": None}}), LlmResponse
    )
    assert usage.usage.prompt_tokens == 0 and usage.usage.cost_usd == 0.0
    null = decode_as(record(EventKind.LLM_RESPONSE_RECEIVED, {"usage": None}), LlmResponse)
    assert null.usage == TokenUsage()  # recorded as null: zero usage, the call still counts


def test_an_unknown_key_survives_a_round_trip() -> None:
    payload = {**SAMPLES[EventKind.RUN_STARTED], "written_by_a_later_version": {"x": [1, 2]}}
    decoded = decode(record(EventKind.RUN_STARTED, payload))
    assert decoded.extras == {"written_by_a_later_version": {"x": [1, 2]}}
    assert encode(decoded)[1] == payload


def test_a_finish_reason_from_a_newer_version_stays_text() -> None:
    end = decode_as(record(EventKind.RUN_FINISHED, {"finish_reason": "rate_limited"}), RunEnd)
    assert end.finish_reason == "rate_limited"


def test_an_unknown_kind_decodes_tolerantly_with_every_key() -> None:
    decoded = decode(record("kind_from_the_future", {"a": 1, "b": [2]}))
    assert isinstance(decoded, UnknownPayload)
    assert decoded.extras == {"a": 1, "b": [2]}
    with pytest.raises(EventPayloadError):
        encode(decoded)  # nothing this version writes is of an unknown kind


def test_a_damaged_payload_of_a_known_kind_fails_naming_the_event() -> None:
    with pytest.raises(EventPayloadError, match=r"event 5 .*run_started.*RunStart"):
        decode(record(EventKind.RUN_STARTED, {"history_length": "lots"}))


def test_decode_as_refuses_a_record_of_another_kind() -> None:
    with pytest.raises(EventPayloadError, match="not 'run_finished'"):
        decode_as(record(EventKind.RUN_STARTED, {}), RunEnd)


def test_a_writer_passing_a_wrong_type_fails_loudly() -> None:
    with pytest.raises(ValidationError):
        RunStart(max_tool_iterations="many")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        AnalystVerdictRecord(attempt_index=1, attempt_id="a1", status="great", category="none", reviewer="x")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        AnalystVerdictRecord(attempt_index=1, attempt_id="a1", status="accepted")  # type: ignore[call-arg]


def test_a_model_outside_the_table_cannot_be_encoded() -> None:
    with pytest.raises(EventPayloadError, match="ValidationDebug"):
        kind_of(ValidationDebug)  # type: ignore[arg-type]


def test_new_event_takes_its_kind_from_the_model() -> None:
    event = new_event(ClaimRelease(reviewer="ana", time=datetime.fromisoformat(NOW)), content="why")
    assert event.kind == EventKind.CLAIM_RELEASED
    assert event.payload == SAMPLES[EventKind.CLAIM_RELEASED]
    assert event.content == "why"


def test_payloads_are_frozen() -> None:
    start = RunStart(model="m")
    with pytest.raises(ValidationError):
        start.model = "other"  # type: ignore[misc]


def test_payload_key_names_only_real_fields() -> None:
    assert payload_key(StatusChange, "to_status") == "to"
    assert payload_key(ValidationDebug, "llm_calls") == "llm_calls"
    with pytest.raises(EventPayloadError):
        payload_key(LlmResponse, "usage_tokens")


def test_every_json_key_the_stores_sql_reads_is_a_model_field() -> None:
    """SQL reads payload and debug keys inside the database; each key comes from ``payload_key``.

    A literal key in the store's SQL (``payload["x"]``, ``debug["x"]``, ``usage["x"]``) would escape
    that check, so none may appear in core/store.
    """
    from core.store import calibration_sql, eventlog

    assert eventlog._USAGE in LlmResponse.model_fields and eventlog._USAGE in ValidationSnapshot.model_fields
    assert eventlog._LLM_CALLS in ValidationSnapshot.model_fields
    for key in (eventlog._PROMPT_TOKENS, eventlog._COMPLETION_TOKENS, eventlog._COST_USD):
        assert key in TokenUsage.model_fields
    assert eventlog.CONTENT_REF in EventPayload.model_fields
    assert calibration_sql._OVERRIDE_ATTEMPT in AnalystVerdictRecord.model_fields
    assert calibration_sql._VALIDATOR_MODEL in ValidationDebug.model_fields
    assert calibration_sql._WARNINGS in ValidationDebug.model_fields
    literal = re.compile(r"""\b(payload|debug|usage)\[["']""")
    offenders = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted((REPO / "core" / "store").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line) and "migrations" not in path.parts
    ]
    assert offenders == []


def test_a_validation_rows_debug_and_verdict_read_as_models() -> None:
    row = ValidationRecord(
        id="v1",
        task_id="t1",
        attempt_id="a1",
        attempt_index=1,
        status="accepted",
        score=0.9,
        category="none",
        result=RESULT,
        raw_response="{}",
        prompt=None,
        debug={**DEBUG, "downgraded_from": "accepted", "added_later": 1},
        created_at=datetime.now(UTC),
    )
    debug = validation_debug(row)
    assert debug.llm_calls == 1 and debug.usage.prompt_tokens == 800 and debug.downgraded_from == "accepted"
    assert json.loads(json.dumps(debug.model_dump())) == row.debug  # nothing lost, nothing added
    verdict = validation_verdict(row)
    assert verdict.passed and verdict.citations[0].evidence_id == "E1"
    legacy = validation_debug(
        row.model_copy(update={"debug": {"warnings": ["chunked-validation: 2 chunks"]}})
    )
    assert legacy.warnings == ["chunked-validation: 2 chunks"] and legacy.usage == TokenUsage()


def test_a_damaged_payload_is_a_product_error_the_command_line_reports() -> None:
    from core.errors import EvidenceDeskError

    with pytest.raises(EvidenceDeskError):
        decode(record(EventKind.LLM_RESPONSE_RECEIVED, {"usage": "lots"}))


def test_usage_totals_survive_a_damaged_response_event() -> None:
    """A summary figure counts what reads; one damaged event must not stop a task from opening."""
    from core.domain.usage import events_usage

    good = record(EventKind.LLM_RESPONSE_RECEIVED, {"usage": {"prompt_tokens": 10, "completion_tokens": 2}})
    bad = record(EventKind.LLM_RESPONSE_RECEIVED, {"usage": "lots"})
    totals = events_usage([good, bad])
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens) == (2, 10, 2)


def test_per_attempt_usage_survives_damaged_start_and_response_events() -> None:
    """The desk shows per-attempt usage for every task with attempts; damage must not stop it."""
    from core.domain.records import AttemptRecord
    from core.domain.usage import attempt_usage

    def run_event(kind: str, payload: dict[str, Any], run_id: str) -> EventRecord:
        return record(kind, payload).model_copy(update={"run_id": run_id})

    attempt = AttemptRecord.model_construct(id="a1", index=1)  # usage reads only these two
    events = [
        run_event(EventKind.RUN_STARTED, {"attempt_id": "a1"}, "r1"),
        run_event(
            EventKind.LLM_RESPONSE_RECEIVED, {"usage": {"prompt_tokens": 10, "completion_tokens": 2}}, "r1"
        ),
        run_event(EventKind.LLM_RESPONSE_RECEIVED, {"usage": "lots"}, "r1"),
        run_event(EventKind.RUN_STARTED, {"attempt_id": ["not", "an", "id"]}, "r2"),
        run_event(EventKind.LLM_RESPONSE_RECEIVED, {"usage": {"prompt_tokens": 5}}, "r2"),
    ]
    totals = attempt_usage([attempt], [], events)[1]
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens) == (2, 10, 2)
