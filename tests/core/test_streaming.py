"""Streaming: text pieces reach the bus as they arrive, and the stored record does not change."""

from __future__ import annotations

from typing import Any

from core.agent import AgentLoop
from core.config import Settings
from core.domain.facts import EventKind, FinishReason
from core.events import BusEvent, EventBus, EvidenceRecorded, TranscriptDelta
from core.llm import LLMGateway
from core.llm.errors import LLMRateLimited, ScriptError
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry, ToolResult
from tests.core.conftest import ScriptFactory

LONG = "The tide tables for the harbour say high water is at 06:12 and again at 18:40 tomorrow."


def _registry() -> ToolRegistry:
    reg = ToolRegistry()

    async def lookup(query: str) -> ToolResult:
        """Look something up."""
        return ToolResult(content=f"result for {query}", title=f"doc {query}")

    reg.register(lookup)
    return reg


def _script() -> list[dict[str, Any]]:
    return [
        {
            "model": "agent",
            "turns": [
                {
                    "content": "Let me check the tide tables first.",
                    "tool_calls": [
                        {"name": "lookup", "arguments": {"query": "tides"}},
                        {"name": "lookup", "arguments": {"query": "harbour"}},
                    ],
                },
                {"content": LONG},
            ],
        }
    ]


async def _run(store: Store, settings: Settings, bus: EventBus, task_id: str | None = None) -> Any:
    session = await store.create_session(task_id=task_id, kind="main")
    ctx = RunContext(
        store=store,
        gateway=LLMGateway(settings, retry_backoff_s=0.001),
        tools=_registry(),
        settings=settings,
        bus=bus,
    )
    outcome = await AgentLoop(ctx).run(
        session_id=session.id,
        history=[],
        new_messages=[{"role": "user", "content": "When is high water?"}],
        model="scripted/agent",
        task_id=task_id,
    )
    await store.flush()
    return outcome, await store.get_run_event_records(session.id, outcome.run_id)


_VOLATILE = {"latency_s"}


def _comparable(events: list[Any]) -> list[tuple[str, Any, str | None]]:
    """Events without what differs between any two runs: ids, times, latencies."""
    return [
        (str(e.kind), {k: v for k, v in e.payload.items() if k not in _VOLATILE}, e.content) for e in events
    ]


async def test_streamed_run_stores_the_same_events_as_an_unstreamed_one(
    store: Store, make_settings: ScriptFactory
) -> None:
    streamed_bus, plain_bus = EventBus(), EventBus()
    deltas: list[TranscriptDelta] = []
    streamed_bus.subscribe(lambda e: deltas.append(e) if isinstance(e, TranscriptDelta) else None)
    plain_notices: list[BusEvent] = []
    plain_bus.subscribe(plain_notices.append)

    streamed, streamed_events = await _run(store, make_settings(_script(), stream_agent=True), streamed_bus)
    plain, plain_events = await _run(store, make_settings(_script(), stream_agent=False), plain_bus)

    assert streamed.finish_reason == plain.finish_reason == FinishReason.STOP
    assert streamed.output_text == plain.output_text == LONG
    assert _comparable(streamed_events) == _comparable(plain_events)
    kinds = [e.kind for e in streamed_events]
    assert kinds.count(EventKind.LLM_RESPONSE_RECEIVED) == 2  # one per call, never one per chunk
    # The text really arrived in pieces, in order, per call.
    assert len(deltas) > 2
    by_iteration: dict[int, str] = {}
    for d in deltas:
        by_iteration[d.iteration] = by_iteration.get(d.iteration, "") + d.text
    assert by_iteration == {1: "Let me check the tide tables first.", 2: LONG}
    assert not any(isinstance(e, TranscriptDelta) for e in plain_notices)


async def test_tool_results_are_announced_when_recorded(store: Store, make_settings: ScriptFactory) -> None:
    task = await store.create_task(title="t", text="When is high water?")
    bus = EventBus()
    seen: list[EvidenceRecorded] = []
    bus.subscribe(lambda e: seen.append(e) if isinstance(e, EvidenceRecorded) else None)
    outcome, _ = await _run(store, make_settings(_script()), bus, task_id=task.id)
    assert [(e.task_id, e.run_id, e.count) for e in seen] == [(task.id, outcome.run_id, 2)]


async def test_streamed_errors_keep_their_kind(make_settings: ScriptFactory) -> None:
    """litellm wraps a stream's failure as a 503; the gateway still sees a rate limit as one."""
    settings = make_settings(
        [
            {"model": "limited", "turns": [{"error": "rate_limit"}]},
            {
                "model": "flaky",
                "turns": [{"error": "server_error", "fail_times": 1, "content": "second try"}],
            },
        ],
        llm_num_retries=0,
    )
    gateway = LLMGateway(settings, retry_backoff_s=0.001)
    messages = [{"role": "user", "content": "q"}]
    try:
        await gateway.complete(model="scripted/limited", messages=messages, stream=True)
    except LLMRateLimited:
        pass
    else:  # pragma: no cover - the assertion below names the failure
        raise AssertionError("a streamed rate limit must stay a rate limit")
    try:
        await gateway.complete(model="scripted/missing", messages=messages, stream=True)
    except ScriptError as exc:
        assert "no conversation" in str(exc)
    pieces: list[str] = []
    retried = LLMGateway(settings.model_copy(update={"llm_num_retries": 1}), retry_backoff_s=0.001)
    answer = await retried.complete(
        model="scripted/flaky", messages=messages, stream=True, on_delta=pieces.append
    )
    assert answer.content == "second try" == "".join(pieces)
    assert [u.ok for u in retried.usage] == [False, True]


async def test_streamed_tool_calls_are_assembled(make_settings: ScriptFactory) -> None:
    gateway = LLMGateway(make_settings(_script()), retry_backoff_s=0.001)
    response = await gateway.complete(
        model="scripted/agent", messages=[{"role": "user", "content": "q"}], stream=True, on_delta=None
    )
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_0_0", "lookup", '{"query": "tides"}'),
        ("call_0_1", "lookup", '{"query": "harbour"}'),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.content == "Let me check the tide tables first."
