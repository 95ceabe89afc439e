"""Typed facts across layers: enums survive the store, and warnings travel as structured data.

Stored values must stay the strings earlier versions wrote (old workspaces keep reading, newer
ones stay readable by older desks); readers must get enum members and structured warnings.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import text as sql_text

from core.domain.evidence import NodeRunResult, RunEvidence, TaskEvidencePacket
from core.domain.facts import (
    AttemptState,
    EventKind,
    FinishReason,
    NodeStatus,
    RevisionRequester,
    RunState,
    VerdictWarning,
    WarningCode,
)
from core.store import NewEvent, Store
from core.validation import legacy_warning, read_warnings
from tests.core.conftest import ScriptFactory
from tests.core.test_validation import packet, run_validation, script, verdict

REPO = Path(__file__).resolve().parents[2]

# Warnings exactly as the previous version stored them in debug["warnings"].
LEGACY_WARNINGS = [
    "same-family-validator: validator openai/gpt-4o and agent openai/gpt-4o-mini are both from the "
    "openai family; judges tend to favour answers from their own family",
    "unknown-context-window: acme/judge is not in litellm's model map; assuming 32000 tokens "
    "(set validator_context_tokens)",
    "context-overflow: the task, rules and answer leave 0 of 900 tokens for evidence; chunks of 256 "
    "tokens may exceed the validator's window",
    "chunked-validation: 4 chunks",
    "unverified-citations: 2 of 5",
]


def _sqlite_path(db_url: str) -> str:
    return db_url.split(":///", 1)[1]


# ---------------------------------------------------------------------------- event kinds


async def test_every_event_kind_round_trips_through_the_store(store: Store) -> None:
    task = await store.create_task("Find the fact")
    assert task.main_session_id is not None
    session = task.main_session_id
    half = len(EventKind) // 2
    kinds = list(EventKind)
    for kind in kinds[:half]:
        await store.append_event(session, kind, {"kind": kind}, task_id=task.id)
    await store.append_events(session, [NewEvent(kind=k, payload={"kind": k}) for k in kinds[half:]])

    events = await store.get_session_events(session)
    assert [e.kind for e in events] == kinds
    assert all(type(e.kind) is EventKind for e in events)
    by_kind = await store.get_session_events(session, kinds=[EventKind.RUN_FINISHED])
    assert [e.kind for e in by_kind] == [EventKind.RUN_FINISHED]
    # On disk they are the plain strings every earlier version wrote and read.
    async with store.engine.connect() as conn:
        stored = list((await conn.execute(sql_text("SELECT kind FROM events ORDER BY id"))).scalars())
    assert stored == [k.value for k in kinds] and all(type(k) is str for k in stored)


async def test_an_event_kind_this_version_does_not_know_still_reads(store: Store) -> None:
    task = await store.create_task("Find the fact")
    assert task.main_session_id is not None
    await store.append_event(task.main_session_id, "written_by_a_later_version", {})
    (event,) = await store.get_session_events(task.main_session_id)
    assert event.kind == "written_by_a_later_version" and not isinstance(event.kind, EventKind)


# ---------------------------------------------------------------------------- states and reasons


async def test_record_states_and_finish_reasons_read_back_as_enums(store: Store) -> None:
    task = await store.create_task("Find the fact")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="Find the fact")
    assert attempt.state is AttemptState.RUNNING and attempt.finish_reason is None
    await store.update_attempt(attempt.id, state=AttemptState.FINISHED, finish_reason=FinishReason.STOP)
    (read,) = await store.list_attempts(task.id)
    assert read.state is AttemptState.FINISHED and read.finish_reason is FinishReason.STOP

    assert task.main_session_id is not None
    run = await store.create_run(session_id=task.main_session_id, kind="agent", model="scripted/agent")
    assert run.state is RunState.RUNNING
    await store.finish_run(
        run.id, finish_reason=FinishReason.MAX_TOOL_ITERATIONS_FINALIZED, output_text="answer"
    )
    finished = await store.get_run(run.id)
    assert finished.state is RunState.FINISHED
    assert finished.finish_reason is FinishReason.MAX_TOOL_ITERATIONS_FINALIZED
    assert finished.finish_reason.usable

    updated = await store.update_task(task.id, revision_requested_by=RevisionRequester.ANALYST)
    assert updated.revision_requested_by is RevisionRequester.ANALYST


def test_old_packet_json_reads_with_enum_members() -> None:
    """A packet stored by the previous version (plain strings, empty finish reasons) still reads."""
    stored = {
        "task_id": "t",
        "attempt_index": 1,
        "main_run": {"run_id": "r", "session_id": "s", "finish_reason": "interrupted"},
        "team_node_results": [
            {
                "node_id": "a",
                "status": "budget_exhausted",
                "finish_reason": "max_tool_iterations_unfinalized",
            },
            {"node_id": "b", "status": "failed", "finish_reason": ""},
            {"node_id": "c", "status": "skipped"},
        ],
    }
    read = TaskEvidencePacket.model_validate(stored)
    assert read.main_run is not None and read.main_run.finish_reason is FinishReason.INTERRUPTED
    a, b, c = read.team_node_results
    assert a.status is NodeStatus.BUDGET_EXHAUSTED and a.status.is_failure
    assert a.finish_reason is FinishReason.MAX_TOOL_ITERATIONS_UNFINALIZED
    assert b.status is NodeStatus.FAILED and b.finish_reason == ""
    assert c.status is NodeStatus.SKIPPED and not c.status.is_failure
    # Written back, the strings are the ones that were read.
    assert read.model_dump(mode="json")["team_node_results"][0]["status"] == "budget_exhausted"
    with pytest.raises(ValueError, match="status"):
        NodeRunResult.model_validate({"node_id": "x", "status": "exploded"})
    assert RunEvidence(run_id="r", session_id="s", finish_reason="error").finish_reason == "error"


# ---------------------------------------------------------------------------- warnings


async def test_old_workspace_string_warnings_read_back_structured(store: Store) -> None:
    task = await store.create_task("Find the fact")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="Find the fact")
    await store.add_validation(
        task_id=task.id,
        attempt_id=attempt.id,
        attempt_index=1,
        result={"status": "rejected", "score": 0.2},
        raw_response="{}",
        prompt=None,
        debug={"warnings": [*LEGACY_WARNINGS, "something-new: a prefix this version never wrote"]},
    )
    (row,) = await store.list_validations(task.id)
    warnings = read_warnings(row.debug)
    assert [w.code for w in warnings] == [
        WarningCode.SAME_FAMILY_VALIDATOR,
        WarningCode.UNKNOWN_CONTEXT_WINDOW,
        WarningCode.CONTEXT_OVERFLOW,
        WarningCode.CHUNKED_VALIDATION,
        WarningCode.UNVERIFIED_CITATIONS,
        WarningCode.OTHER,
    ]
    same, unknown, overflow, chunked, unverified, other = warnings
    assert (chunked.count, chunked.total) == (4, None)
    assert (unverified.count, unverified.total) == (2, 5)
    assert all(w.count is None for w in (same, unknown, overflow, other))
    assert same.message.startswith("validator openai/gpt-4o and agent")  # the prefix is gone
    assert other.message == "something-new: a prefix this version never wrote"  # nothing lost


def test_read_warnings_accepts_new_mixed_and_damaged_entries() -> None:
    new = VerdictWarning(code=WarningCode.UNVERIFIED_CITATIONS, message="m", count=1, total=3)
    debug = {
        "warnings": [
            new.model_dump(mode="json"),
            "chunked-validation: 2 chunks",
            {"code": "from-a-later-version", "message": "kept words"},
            42,
        ]
    }
    first, second, later, damaged = read_warnings(debug)
    assert first == new
    assert second == VerdictWarning(code=WarningCode.CHUNKED_VALIDATION, message="2 chunks", count=2)
    assert later == VerdictWarning(code=WarningCode.OTHER, message="kept words")
    assert damaged == VerdictWarning(code=WarningCode.OTHER, message="42")
    assert read_warnings({}) == [] and read_warnings({"warnings": None}) == []
    assert legacy_warning("no prefix at all").code is WarningCode.OTHER


async def test_service_emits_structured_warnings_for_same_family_and_citations(
    store: Store, make_settings: ScriptFactory
) -> None:
    cited = [
        {"claim": "a", "evidence_id": "E1", "quote": "The answer is 42", "verdict": "supported"},
        {"claim": "b", "evidence_id": "E1", "quote": "not in the evidence", "verdict": "supported"},
        {"claim": "c", "evidence_id": "E7", "quote": "anything", "verdict": "supported"},
    ]
    settings = make_settings(script(verdict("accepted", cited)))
    report, _, task_id, session_id = await run_validation(store, settings, packet(["The answer is 42."]))

    codes = [w.code for w in report.warnings]
    assert codes == [WarningCode.SAME_FAMILY_VALIDATOR, WarningCode.UNVERIFIED_CITATIONS]
    unverified = report.warnings[1]
    assert (unverified.count, unverified.total) == (2, 3)
    assert not unverified.message.startswith(WarningCode.UNVERIFIED_CITATIONS.value)
    # Stored as dicts in the validation row and in the snapshot event, and read back the same.
    (row,) = await store.list_validations(task_id)
    assert all(isinstance(w, dict) for w in row.debug["warnings"])
    assert read_warnings(row.debug) == report.warnings
    (event,) = await store.get_session_events(session_id, kinds=[EventKind.TASK_VALIDATION_SNAPSHOTTED])
    assert [VerdictWarning.model_validate(w) for w in event.payload["warnings"]] == report.warnings


async def test_service_emits_a_chunked_warning_with_the_chunk_count(
    store: Store, make_settings: ScriptFactory
) -> None:
    contents = [f"ITEM-{i:02d} " + "lorem ipsum " * 250 for i in range(8)]
    conversations = [
        {
            "model": "validator",
            "match": "Findings from the evidence chunks",
            "turns": [{"content": verdict()}],
        },
        {"model": "validator", "turns": [{"content": '{"findings": [], "notes": "nothing contradicts"}'}]},
    ]
    # The scripted acceptance cites nothing: a coherence check would add its own warning.
    settings = make_settings(conversations, validator_context_tokens=3000, coherence_min_citations=0)
    report, gateway, task_id, _ = await run_validation(
        store, settings, packet(contents), agent_model="openai/gpt-4o"
    )
    chunk_count = len(gateway.sent) - 1  # every call but the verdict reviewed one chunk
    assert report.debug["strategy"] == "chunked" and chunk_count > 1
    (chunked,) = report.warnings
    assert chunked.code is WarningCode.CHUNKED_VALIDATION
    assert chunked.count == chunk_count == report.debug["chunk_count"] and chunked.total is None
    (row,) = await store.list_validations(task_id)
    assert read_warnings(row.debug) == [chunked]


# ---------------------------------------------------------------------------- no literals left

# Packages whose event kinds go through EventKind. core/tasks is being reorganised on another
# branch and still spells some kinds as strings; add it here once that lands.
TYPED_PACKAGES = ("agent", "team", "evidence", "validation", "llm", "domain")


def _event_kind_literals(source: str, filename: str) -> list[tuple[int, str]]:
    values = {k.value for k in EventKind}
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source, filename=filename))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values
    ]


def test_typed_packages_spell_no_event_kind_as_a_string() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{line}: {value!r}"
        for package in TYPED_PACKAGES
        for path in sorted((REPO / "core" / package).rglob("*.py"))
        if path.name != "facts.py"  # where the strings are defined, once
        for line, value in _event_kind_literals(path.read_text(encoding="utf-8"), str(path))
    ]
    assert not offenders, "use core.domain.facts.EventKind:\n" + "\n".join(offenders)


def test_event_kind_literal_checker_finds_a_bare_kind() -> None:
    assert _event_kind_literals('store.append_event(s, "run_finished", {})', "<t>") == [(1, "run_finished")]
    assert _event_kind_literals("store.append_event(s, EventKind.RUN_FINISHED, {})", "<t>") == []
