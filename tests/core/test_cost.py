"""Cost and tokens: each call's price, task totals, and the task budget that ends the tool loop."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from core.agent import AgentLoop
from core.config import load_settings
from core.domain.facts import EventKind, FinishReason
from core.domain.records import EventRecord
from core.domain.usage import UsageTotals, attempt_usage, events_usage, recorded_spend
from core.events import EventBus
from core.llm import LLMGateway, reset_scripted_stats, scripted_stats
from core.llm.cost import call_cost
from core.llm.gateway import _import_litellm
from core.runtime import RunContext
from core.store import Store
from core.store.eventlog import NewEvent
from core.tools.registry import ToolRegistry, ToolResult
from tests.core.conftest import ScriptFactory


def test_a_call_is_priced_from_litellm_then_from_settings_and_scripted_is_free() -> None:
    litellm = _import_litellm()
    plain = load_settings()
    priced = load_settings(llm_cost_per_mtok_in=2.0, llm_cost_per_mtok_out=8.0)
    known = sum(litellm.cost_per_token(model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=100))
    assert call_cost(litellm, "gpt-4o-mini", 1000, 100, priced) == pytest.approx(known) and known > 0
    assert call_cost(litellm, "openai/my-local-model", 1000, 100, plain) == 0.0
    assert call_cost(litellm, "openai/my-local-model", 1000, 100, priced) == pytest.approx(0.0028)
    assert call_cost(litellm, "ollama/llama3", 1_000_000, 0, priced) == pytest.approx(2.0)
    assert call_cost(litellm, "scripted/agent", 1000, 100, priced) == 0.0


async def test_a_scripted_call_is_free_though_litellms_map_gives_it_a_nominal_rate(
    make_settings: ScriptFactory,
) -> None:
    """litellm's map carries scripted models at a nominal rate (so litellm skips its zero-cost
    diagnostic after each call); what a call costs is ours to say, and a scripted one costs nothing."""
    turns = [{"content": "answer", "usage": {"prompt_tokens": 10_000_000, "completion_tokens": 10_000_000}}]
    gateway = LLMGateway(make_settings([{"model": "agent", "turns": turns}]))
    response = await gateway.complete(model="scripted/agent", messages=[{"role": "user", "content": "q"}])
    litellm = _import_litellm()
    assert sum(litellm.cost_per_token(model="scripted/agent", prompt_tokens=1000, completion_tokens=0)) > 0
    assert response.usage.prompt_tokens == 10_000_000 and response.usage.cost_usd == 0.0
    assert response.usage.unpriced_calls == 0


def _registry() -> ToolRegistry:
    reg = ToolRegistry()

    async def lookup(query: str) -> ToolResult:
        """Look something up."""
        return ToolResult(content=f"result for {query}")

    reg.register(lookup)
    return reg


def _tool_turn(query: str, tokens: int) -> dict[str, Any]:
    return {
        "tool_calls": [{"name": "lookup", "arguments": {"query": query}}],
        "usage": {"prompt_tokens": tokens - 10, "completion_tokens": 10},
    }


async def _run(store: Store, settings: Any, task_id: str) -> Any:
    session = await store.create_session(task_id=task_id, kind="main")
    ctx = RunContext(
        store=store,
        gateway=LLMGateway(settings, retry_backoff_s=0.001),
        tools=_registry(),
        settings=settings,
        bus=EventBus(),
    )
    outcome = await AgentLoop(ctx).run(
        session_id=session.id,
        history=[],
        new_messages=[{"role": "user", "content": "question"}],
        model="scripted/agent",
        task_id=task_id,
    )
    await store.flush()
    return outcome, await store.get_run_event_records(session.id, outcome.run_id)


async def test_a_token_budget_finalizes_after_the_round_that_spent_it(
    store: Store, make_settings: ScriptFactory
) -> None:
    turns = [
        _tool_turn("a", 100),
        _tool_turn("b", 150),
        {"content": "from evidence"},
    ]
    settings = make_settings([{"model": "agent", "turns": turns}], max_task_tokens=200)
    task = await store.create_task("question")
    reset_scripted_stats()
    outcome, events = await _run(store, settings, task.id)
    assert outcome.finish_reason == FinishReason.MAX_TOOL_ITERATIONS_FINALIZED
    requests = scripted_stats().requests
    assert [r.turn for r in requests] == [0, 1, 2] and requests[-1].tool_names == ()  # no tools at the end
    final = next(e for e in events if e.kind == EventKind.FINALIZATION_REQUESTED)
    assert final.payload["budget"] == "token" and "token budget" in final.payload["message"]["content"]
    results = [e for e in events if e.kind == EventKind.TOOL_RESULT_RECORDED]
    assert [e.content for e in results] == ["result for a", "result for b"]  # the evidence is kept
    assert events_usage(events).tokens == 100 + 150 + outcome_tokens(events)


def outcome_tokens(events: list[Any]) -> int:
    last = [e for e in events if e.kind == EventKind.LLM_RESPONSE_RECEIVED][-1]
    return int(last.payload["usage"]["prompt_tokens"]) + int(last.payload["usage"]["completion_tokens"])


async def test_the_budget_counts_what_earlier_runs_of_the_task_spent(
    store: Store, make_settings: ScriptFactory
) -> None:
    first = make_settings([{"model": "agent", "turns": [_tool_turn("a", 300), {"content": "first answer"}]}])
    task = await store.create_task("question")
    await _run(store, first, task.id)
    spent = recorded_spend(await store.get_task_events(task.id))
    assert spent.tokens >= 300 and spent.calls == 2

    again = make_settings(
        [{"model": "agent", "turns": [_tool_turn("b", 10), {"content": "second"}]}],
        max_task_tokens=300,
    )
    outcome, events = await _run(store, again, task.id)
    assert (
        outcome.finish_reason == FinishReason.MAX_TOOL_ITERATIONS_FINALIZED
        and outcome.output_text == "second"
    )
    assert [e.content for e in events if e.kind == EventKind.TOOL_RESULT_RECORDED] == ["result for b"]


async def test_without_a_budget_nothing_changes(store: Store, make_settings: ScriptFactory) -> None:
    settings = make_settings([{"model": "agent", "turns": [_tool_turn("a", 10_000), {"content": "done"}]}])
    task = await store.create_task("question")
    outcome, events = await _run(store, settings, task.id)
    assert outcome.finish_reason == FinishReason.STOP
    assert not any(e.kind == EventKind.FINALIZATION_REQUESTED for e in events)


def test_totals_add_up_and_read_as_one_line() -> None:
    totals = UsageTotals()
    totals.add({"prompt_tokens": 1000, "completion_tokens": 234, "cost_usd": 0.0012})
    totals.add(None)
    assert totals.calls == 2 and totals.tokens == 1234
    assert totals.summary() == "1,234 tokens (1,000 in, 234 out) · $0.0012"
    assert attempt_usage([], [], []) == {}


class ReadMeter:
    """The store, with every event record its readers hand back measured (counters only)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.rows = 0
        self.chars = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not (name.startswith(("get_", "list_", "task_")) and inspect.iscoroutinefunction(attr)):
            return attr

        async def read(*args: Any, **kwargs: Any) -> Any:
            out = await attr(*args, **kwargs)
            for record in out if isinstance(out, list) else [out]:
                if isinstance(record, EventRecord):
                    self.rows += 1
                    self.chars += len(record.content or "") + len(json.dumps(record.payload))
            return out

        return read


async def _earlier_run(store: Store, result_chars: int) -> str:
    """A task whose earlier run made two priced calls, got a tool result this big, and was validated."""
    task = await store.create_task("question")
    session = await store.create_session(task_id=task.id, kind="main")
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "cost_usd": 0.25}
    await store.append_events(
        session.id,
        [
            NewEvent(kind=EventKind.LLM_RESPONSE_RECEIVED, payload={"usage": usage}),
            NewEvent(
                kind=EventKind.TOOL_RESULT_RECORDED,
                payload={"tool_name": "lookup", "tool_call_id": "c1"},
                content="r" * result_chars,
            ),
            NewEvent(
                kind=EventKind.LLM_RESPONSE_RECEIVED, payload={"usage": None}
            ),  # a provider that said nothing
            NewEvent(
                kind=EventKind.TASK_VALIDATION_SNAPSHOTTED,
                payload={
                    "usage": {"prompt_tokens": 40, "completion_tokens": 5, "cost_usd": 0.5},
                    "llm_calls": 3,
                },
            ),
        ],
        run_id="earlier",
        task_id=task.id,
    )
    return task.id


async def test_spend_is_learned_without_reading_the_tool_results(
    store: Store, make_settings: ScriptFactory
) -> None:
    """A task budget is checked against the task's spend; its evidence size must not matter."""
    read: dict[int, tuple[int, int]] = {}
    for size in (100, 2_000_000):
        task_id = await _earlier_run(store, size)
        assert await store.task_spend(task_id) == recorded_spend(await store.get_task_events(task_id))
        assert await store.task_spend(task_id) == UsageTotals(
            calls=5, prompt_tokens=160, completion_tokens=35, cost_usd=0.75
        )
        settings = make_settings(
            [{"model": "agent", "turns": [_tool_turn("b", 10), {"content": "second"}]}], max_task_tokens=190
        )
        meter = ReadMeter(store)
        session = await store.create_session(task_id=task_id, kind="main")
        ctx = RunContext(
            store=meter,  # type: ignore[arg-type]
            gateway=LLMGateway(settings, retry_backoff_s=0.001),
            tools=_registry(),
            settings=settings,
            bus=EventBus(),
        )
        outcome = await AgentLoop(ctx).run(
            session_id=session.id,
            history=[],
            new_messages=[{"role": "user", "content": "question"}],
            model="scripted/agent",
            task_id=task_id,
        )
        # The earlier spend (195 tokens) is over the budget: no tool is offered, the answer is final.
        assert outcome.finish_reason == FinishReason.MAX_TOOL_ITERATIONS_FINALIZED
        read[size] = (meter.rows, meter.chars)
    # Learning the spend read no event back, whatever the size of the earlier tool result.
    assert read[100] == read[2_000_000] == (0, 0)
