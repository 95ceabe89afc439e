"""Streaming over real HTTP: litellm's OpenAI path against an SSE server on loopback.

The server is deliberately minimal (one handler; the full fake lives in ``tests/fakes``): it
answers turn *k* of a conversation (k = assistant messages in the request) either as one JSON
body or, when the request says ``stream: true``, as ``text/event-stream`` chunks with the tool
call's arguments split across deltas, the way OpenAI sends them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from core.agent import AgentLoop
from core.config import load_settings
from core.domain.facts import EventKind, FinishReason
from core.events import EventBus, TranscriptDelta
from core.llm import LLMGateway
from core.llm.gateway import _import_litellm
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry, ToolResult

MODEL = "openai/gpt-4o-mini"  # in litellm's cost map, so the cost comes from it
ANSWER = "High water is at 06:12 according to the harbour tide table."
USAGE = [(120, 30), (180, 20)]


def _turns() -> list[dict[str, Any]]:
    return [
        {"content": None, "tool_calls": [("call_a", "lookup", '{"query": "tides"}')]},
        {"content": ANSWER, "tool_calls": []},
    ]


def _sse(turn: dict[str, Any], usage: tuple[int, int]) -> Iterator[str]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    text = turn["content"] or ""
    for i in range(0, len(text), 10):
        yield chunk({"content": text[i : i + 10]})
    for index, (call_id, name, arguments) in enumerate(turn["tool_calls"]):
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for i in range(0, len(arguments), 5):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + 5]}}]})
    yield chunk({}, "tool_calls" if turn["tool_calls"] else "stop")
    prompt, completion = usage
    tail = {
        **base,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    yield f"data: {json.dumps(tail)}\n\n"
    yield "data: [DONE]\n\n"


def _json(turn: dict[str, Any], usage: tuple[int, int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn["content"]}
    if turn["tool_calls"]:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in turn["tool_calls"]
        ]
    prompt, completion = usage
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if turn["tool_calls"] else "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


class FakeOpenAI:
    def __init__(self, server: HTTPServer) -> None:
        self.streamed: list[bool] = []
        server.expect_request("/v1/chat/completions", method="POST").respond_with_handler(self.handle)

    def handle(self, request: Request) -> Response:
        body = json.loads(request.get_data())
        k = sum(1 for m in body["messages"] if m["role"] == "assistant")
        turn, usage = _turns()[k], USAGE[k]
        self.streamed.append(bool(body.get("stream")))
        if body.get("stream"):
            return Response("".join(_sse(turn, usage)), content_type="text/event-stream")
        return Response(json.dumps(_json(turn, usage)), content_type="application/json")


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Store]:
    s = await Store.open(sqlite_url)
    yield s
    await s.close()


@pytest.fixture
def fake_openai(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    # Until per-role profiles land, the endpoint is litellm's environment; monkeypatch scopes it.
    monkeypatch.setenv("OPENAI_API_BASE", httpserver.url_for("/v1"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    return FakeOpenAI(httpserver)


def _registry() -> ToolRegistry:
    reg = ToolRegistry()

    async def lookup(query: str) -> ToolResult:
        """Look something up."""
        return ToolResult(content=f"tide table for {query}: high water 06:12", title="Tide table")

    reg.register(lookup)
    return reg


async def _run(store: Store, bus: EventBus, **settings: Any) -> Any:
    config = load_settings(agent_model=MODEL, llm_num_retries=0, **settings)
    task = await store.create_task("When is high water?", title="tides")
    session = await store.create_session(task_id=task.id, kind="main")
    ctx = RunContext(store=store, gateway=LLMGateway(config), tools=_registry(), settings=config, bus=bus)
    outcome = await AgentLoop(ctx).run(
        session_id=session.id,
        history=[],
        new_messages=[{"role": "user", "content": "When is high water?"}],
        model=MODEL,
        task_id=task.id,
    )
    await store.flush()
    return outcome, await store.get_run_event_records(session.id, outcome.run_id)


def _comparable(events: list[Any]) -> list[tuple[str, Any, str | None]]:
    return [
        (str(e.kind), {k: v for k, v in e.payload.items() if k != "latency_s"}, e.content) for e in events
    ]


async def test_a_stream_with_tool_calls_over_http_records_what_a_plain_call_does(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    bus = EventBus()
    pieces: list[str] = []
    bus.subscribe(lambda e: pieces.append(e.text) if isinstance(e, TranscriptDelta) else None)
    streamed, streamed_events = await _run(store, bus, stream_agent=True)
    plain, plain_events = await _run(store, EventBus(), stream_agent=False)
    assert fake_openai.streamed == [True, True, False, False]

    assert streamed.finish_reason == plain.finish_reason == FinishReason.STOP
    assert streamed.output_text == ANSWER and "".join(pieces) == ANSWER and len(pieces) > 1
    assert _comparable(streamed_events) == _comparable(plain_events)
    asked = [
        (c["name"], c["arguments"])
        for e in streamed_events
        if e.kind == EventKind.LLM_RESPONSE_RECEIVED
        for c in e.payload["tool_calls"]
    ]
    assert asked == [("lookup", '{"query": "tides"}')]

    responses = [e for e in streamed_events if e.kind == EventKind.LLM_RESPONSE_RECEIVED]
    litellm = _import_litellm()
    for event, (prompt, completion) in zip(responses, USAGE, strict=True):
        usage = event.payload["usage"]
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (prompt, completion)
        expected = sum(
            litellm.cost_per_token(model=MODEL, prompt_tokens=prompt, completion_tokens=completion)
        )
        assert usage["cost_usd"] == pytest.approx(expected) and expected > 0


async def test_a_cost_budget_ends_the_tool_loop_with_a_no_tools_finalization(
    store: Store, fake_openai: FakeOpenAI
) -> None:
    outcome, events = await _run(store, EventBus(), max_task_cost_usd=1e-9)
    assert outcome.finish_reason == FinishReason.MAX_TOOL_ITERATIONS_FINALIZED
    assert outcome.output_text == ANSWER
    final = next(e for e in events if e.kind == EventKind.FINALIZATION_REQUESTED)
    assert final.payload["budget"] == "cost"
    snapshots = [e for e in events if e.kind == EventKind.LLM_REQUEST_SNAPSHOTTED]
    assert [s.payload["tool_names"] for s in snapshots] == [["lookup"], []]
    finished = next(e for e in events if e.kind == EventKind.RUN_FINISHED)
    assert "cost budget was reached" in finished.payload["warnings"][0]
