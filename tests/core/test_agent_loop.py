from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from core.agent import (
    COMPACT_SNAPSHOT_KEYS,
    FINALIZATION_INSTRUCTION,
    NO_ANSWER_MESSAGE,
    AgentLoop,
)
from core.config import Settings
from core.domain import TaskEvidencePacket
from core.domain.facts import FinishReason
from core.events import EventBus
from core.evidence import build_run_evidence, render_packet, session_messages
from core.llm import LLMGateway, reset_scripted_stats, scripted_stats
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry, ToolResult
from tests.core.conftest import ScriptFactory
from tests.gates import wait_until


def _ctx(store: Store, settings: Settings, gateway: LLMGateway, tools: ToolRegistry) -> RunContext:
    return RunContext(store=store, gateway=gateway, tools=tools, settings=settings, bus=EventBus())


BIG = "x" * 600 + " FACT-AFTER-500 " + "y" * 50_000 + " FACT-AFTER-50000 " + "z" * 100


def _registry(calls: list[str] | None = None) -> ToolRegistry:
    reg = ToolRegistry()
    fast_done = asyncio.Event()  # "slow" finishes after "fast", whatever the machine's load

    async def lookup(query: str) -> ToolResult:
        """Look something up."""
        if calls is not None:
            calls.append(query)
        if query == "boom":
            raise RuntimeError("index offline")
        if query == "big":
            return ToolResult(content=BIG, url="file:///doc.md", title="Big doc")
        if query == "slow":
            await asyncio.wait_for(fast_done.wait(), 60)  # bounds a hang only
        if query == "fast":
            fast_done.set()
        return ToolResult(content=f"result for {query}")

    reg.register(lookup)
    return reg


def _tool_turn(*queries: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "lookup", "arguments": {"query": q}} for q in queries]}


async def _run(
    store: Store,
    settings: Settings,
    gateway_for: Callable[[Settings], LLMGateway],
    registry: ToolRegistry | None = None,
    **kwargs: Any,
) -> Any:
    session = await store.create_session(task_id=None, kind="main")
    loop = AgentLoop(_ctx(store, settings, gateway_for(settings), registry or _registry()))
    outcome = await loop.run(
        session_id=session.id,
        history=[],
        new_messages=[{"role": "user", "content": "question"}],
        model="scripted/agent",
        **kwargs,
    )
    return outcome


async def test_tool_loop_answers_and_keeps_call_order(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    settings = make_settings([{"model": "agent", "turns": [_tool_turn("slow", "fast"), {"content": "done"}]}])
    outcome = await _run(store, settings, gateway_for)
    assert outcome.finish_reason == FinishReason.STOP and outcome.output_text == "done" and outcome.usable
    tool_msgs = [m for m in outcome.messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ["result for slow", "result for fast"]
    events = await store.get_run_event_records(outcome.session_id, outcome.run_id)
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("tool_result_recorded") == 2
    assert kinds.count("llm_request_snapshotted") == kinds.count("llm_response_received") == 2
    # The calls a turn runs are the ones its response lists: no row of their own repeats them.
    assert "tool_call_started" not in kinds
    asked = [
        json.loads(c["arguments"])["query"]
        for e in events
        if e.kind == "llm_response_received"
        for c in e.payload["tool_calls"]
    ]
    assert asked == ["slow", "fast"]


async def test_budget_reached_is_finalized_without_tools(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    reset_scripted_stats()
    turns = [_tool_turn("big"), _tool_turn("again"), {"content": "answer from evidence"}]
    settings = make_settings([{"model": "agent", "turns": turns}], max_tool_iterations=2)
    outcome = await _run(store, settings, gateway_for)
    assert outcome.finish_reason == FinishReason.MAX_TOOL_ITERATIONS_FINALIZED
    assert outcome.output_text == "answer from evidence"
    assert "tool loop stopped" not in outcome.output_text.lower()
    requests = scripted_stats().requests
    assert requests[-1].tool_names == ()  # no tools offered on the final call
    assert all(r.tool_names == ("lookup",) for r in requests[:2])
    assert outcome.messages[-2] == {"role": "user", "content": FINALIZATION_INSTRUCTION}

    evidence = await build_run_evidence(store, outcome.session_id, outcome.run_id)
    assert evidence.finish_reason == FinishReason.MAX_TOOL_ITERATIONS_FINALIZED
    assert [t.content for t in evidence.tool_results][1:] == ["result for again"]
    assert evidence.tool_results[0].content == BIG  # complete, never truncated
    assert evidence.tool_results[0].url == "file:///doc.md" and evidence.tool_results[0].title == "Big doc"
    assert evidence.warnings and "tool budget" in evidence.warnings[0]
    text = render_packet(TaskEvidencePacket(task_id="t", attempt_index=1, main_run=evidence)).text
    assert "FACT-AFTER-500" in text and "FACT-AFTER-50000" in text


async def test_failed_finalization_ends_unfinalized_with_clear_message(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    turns = [_tool_turn("a"), {"error": "server_error"}]
    settings = make_settings([{"model": "agent", "turns": turns}], max_tool_iterations=1, llm_num_retries=1)
    outcome = await _run(store, settings, gateway_for)
    assert outcome.finish_reason == FinishReason.MAX_TOOL_ITERATIONS_UNFINALIZED
    assert outcome.output_text == NO_ANSWER_MESSAGE and not outcome.usable
    evidence = await build_run_evidence(store, outcome.session_id, outcome.run_id)
    assert [t.content for t in evidence.tool_results] == ["result for a"]


async def test_empty_finalization_is_unfinalized(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    turns = [_tool_turn("a"), {"content": "   "}]
    settings = make_settings([{"model": "agent", "turns": turns}], max_tool_iterations=1)
    outcome = await _run(store, settings, gateway_for)
    assert (
        outcome.finish_reason == FinishReason.MAX_TOOL_ITERATIONS_UNFINALIZED
        and outcome.output_text == NO_ANSWER_MESSAGE
    )


async def test_compact_snapshots_hold_exactly_the_compact_keys(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    settings = make_settings([{"model": "agent", "turns": [_tool_turn("a"), {"content": "ok"}]}])
    outcome = await _run(store, settings, gateway_for)
    snaps = [
        e
        for e in await store.get_run_event_records(outcome.session_id, outcome.run_id)
        if e.kind == "llm_request_snapshotted"
    ]
    assert len(snaps) == 2
    for snap in snaps:
        assert set(snap.payload) == set(COMPACT_SNAPSHOT_KEYS)
        assert snap.content is None
    assert snaps[0].payload["tool_names"] == ["lookup"]
    # Every turn that offers the tools reports their serialised size (measured once per run).
    schema_chars = len(json.dumps(_registry().schemas(), ensure_ascii=False))
    assert [s.payload["tool_schema_chars"] for s in snaps] == [schema_chars, schema_chars]


async def test_full_snapshots_only_with_debug_flag_and_never_secrets(
    store: Store,
    make_settings: ScriptFactory,
    gateway_for: Callable[[Settings], LLMGateway],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-should-never-be-stored")
    settings = make_settings(
        [{"model": "agent", "turns": [_tool_turn("a"), {"content": "ok"}]}], debug_full_request_snapshots=True
    )
    outcome = await _run(store, settings, gateway_for)
    events = await store.get_run_event_records(outcome.session_id, outcome.run_id)
    snaps = [e for e in events if e.kind == "llm_request_snapshotted"]
    assert set(snaps[0].payload) == {*COMPACT_SNAPSHOT_KEYS, "full_request"}
    full = json.loads(snaps[0].content or "")
    assert full["messages"][0]["content"] == "question"
    assert full["tools"][0]["function"]["name"] == "lookup"
    blob = " ".join(f"{e.payload} {e.content}" for e in events).lower()
    assert "sk-test-secret" not in blob and "authorization" not in blob and "api_key" not in blob


async def test_tool_errors_become_evidence_and_loop_continues(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    turns = [
        {
            "tool_calls": [
                {"name": "lookup", "arguments": {"query": "boom"}},
                {"name": "nope", "arguments": {}},
            ]
        },
        {"tool_calls": [{"name": "lookup", "arguments": {"wrong": 1}}]},
        {"content": "recovered"},
    ]
    settings = make_settings([{"model": "agent", "turns": turns}])
    outcome = await _run(store, settings, gateway_for)
    assert outcome.finish_reason == FinishReason.STOP and outcome.output_text == "recovered"
    evidence = await build_run_evidence(store, outcome.session_id, outcome.run_id)
    assert [t.is_error for t in evidence.tool_results] == [True, True, True]
    assert "index offline" in evidence.tool_results[0].content
    assert "unknown tool 'nope'" in evidence.tool_results[1].content
    assert "query" in evidence.tool_results[2].content


async def test_cancellation_records_the_end_and_keeps_evidence(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    turns = [_tool_turn("a"), {"content": "never", "delay_s": 3600}]
    settings = make_settings([{"model": "agent", "turns": turns}])
    session = await store.create_session(task_id=None, kind="main")
    loop = AgentLoop(_ctx(store, settings, gateway_for(settings), _registry()))
    second_call = asyncio.Event()
    calls = {"llm": 0}

    def on_progress(p: Any) -> None:
        calls["llm"] += p.phase == "llm"
        if calls["llm"] == 2:
            second_call.set()

    loop.on_progress = on_progress
    task = asyncio.create_task(
        loop.run(
            session_id=session.id,
            history=[],
            new_messages=[{"role": "user", "content": "q"}],
            model="scripted/agent",
        )
    )
    await asyncio.wait_for(second_call.wait(), 60)
    # Cancel while the second call is certainly waiting on the model, wherever the loop is.
    await wait_until(lambda: scripted_stats().in_flight == 1, what="the second call to be in flight")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    runs = await store.list_runs()
    run = runs[0]
    assert run.finish_reason == "cancelled"
    evidence = await build_run_evidence(store, session.id, run.id)
    assert evidence.finish_reason == "cancelled"
    assert [t.content for t in evidence.tool_results] == ["result for a"]


async def test_a_cancelled_run_whose_start_was_lost_still_ends_in_its_cancellation(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    """The start is written behind the loop, so its loss surfaces when the end is written, which a
    cancelled run does under its cancellation: the caller still hears the cancellation it asked for
    (the loss is logged; nothing of the run is stored, and no end is written past the hole)."""
    settings = make_settings([{"model": "agent", "turns": [{"content": "never", "delay_s": 3600}]}])
    loop = AgentLoop(_ctx(store, settings, gateway_for(settings), _registry()))
    task = asyncio.create_task(
        loop.run(
            session_id="no-such-session",
            history=[],
            new_messages=[{"role": "user", "content": "q"}],
            model="scripted/agent",
        )
    )
    await wait_until(lambda: scripted_stats().in_flight == 1, what="the call to be in flight")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await store.list_runs() == []


async def test_llm_error_ends_run_with_reason_and_session_replays(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    settings = make_settings(
        [{"model": "agent", "turns": [_tool_turn("a"), {"error": "rate_limit"}]}], llm_num_retries=1
    )
    outcome = await _run(store, settings, gateway_for)
    assert outcome.finish_reason == "llm_error" and not outcome.usable
    assert "rate" in (outcome.error or "").lower()
    replay = await session_messages(store, outcome.session_id)
    assert [m["role"] for m in replay] == ["user", "assistant", "tool"]


async def test_tool_calls_when_none_were_offered_are_flagged_pending(
    store: Store, make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    turns = [{"content": "Let me look that up first.", **_tool_turn("more")}]
    settings = make_settings([{"model": "agent", "turns": turns}])
    outcome = await _run(store, settings, gateway_for, include_tools=False, max_tool_iterations=0)
    assert outcome.finish_reason == FinishReason.STOP and outcome.pending_tool_calls
    finished = (await store.get_run_event_records(outcome.session_id, outcome.run_id))[-1]
    assert finished.payload["pending_tool_calls"] is True
