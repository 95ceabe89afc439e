from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from core.agent import RunStep
from core.config import Settings
from core.domain.facts import FinishReason
from core.events import EventBus
from core.evidence import render_packet
from core.llm import LLMGateway, LLMResponse, reset_scripted_stats, scripted_stats
from core.llm.scripted import request_text
from core.runtime import RunContext
from core.store import Store
from core.team import (
    SYNTHESIS_INSTRUCTIONS,
    PlanError,
    TeamPlan,
    TeamScheduler,
    build_attempt_packet,
)
from core.tools.registry import ToolRegistry, ToolResult
from tests.core.conftest import ScriptFactory
from tests.gates import HANG_S, GatedGateway

GatewayFor = Callable[[Settings], LLMGateway]
SYNTH_MATCH = "Write the final answer to the task above"


def _registry() -> ToolRegistry:
    reg = ToolRegistry()

    async def lookup(query: str) -> ToolResult:
        """Look something up."""
        return ToolResult(content=f"result for {query}")

    reg.register(lookup)
    return reg


def _node(
    node_id: str, task: str, *deps: str, tools: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {"id": node_id, "role": "You are a researcher.", "task": task, "tools": tools or [], **extra} | (
        {"depends_on": list(deps)} if deps else {}
    )


def _conv(word: str, *turns: dict[str, Any]) -> dict[str, Any]:
    return {"model": "agent", "match": rf"\b{word}\b", "turns": list(turns)}


def _tool_turn(*queries: str, delay_s: float = 0.0) -> dict[str, Any]:
    return {
        "tool_calls": [{"name": "lookup", "arguments": {"query": q}} for q in queries],
        "delay_s": delay_s,
    }


class _Ctx:
    def __init__(self, task_id: str, attempt_id: str, main_session_id: str) -> None:
        self.task_id = task_id
        self.attempt_id = attempt_id
        self.main_session_id = main_session_id


async def _ctx(store: Store) -> _Ctx:
    task = await store.create_task("overall question for the team")
    attempt = await store.create_attempt(task.id, 1, trigger="start", prompt=task.text)
    assert task.main_session_id is not None  # every task is created with its main session
    return _Ctx(task.id, attempt.id, task.main_session_id)


def _scheduler(
    store: Store,
    settings: Settings,
    gateway: LLMGateway,
    on_progress: Callable[[RunStep], None] | None = None,
) -> TeamScheduler:
    ctx = RunContext(store=store, gateway=gateway, tools=_registry(), settings=settings, bus=EventBus())
    return TeamScheduler(ctx, on_progress=on_progress)


async def _run(scheduler: TeamScheduler, plan: TeamPlan, ctx: _Ctx) -> Any:
    return await scheduler.run(
        plan,
        task_text="overall question for the team",
        task_id=ctx.task_id,
        attempt_id=ctx.attempt_id,
        parent_session_id=ctx.main_session_id,
    )


class _SlotWatch(GatedGateway):
    """Holds every node's calls at one gate and counts the nodes between first call and final answer.

    A node holds its scheduler slot from its first model call to its final answer (tool turns
    included), so the number of such nodes is what ``max_parallel_team_nodes`` limits.
    """

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, TOPIC)
        self.active: set[str] = set()
        self.peak = 0

    async def complete(self, **kwargs: Any) -> LLMResponse:
        found = re.search(TOPIC, request_text(kwargs["messages"]))
        assert found is not None
        node = found.group()
        self.active.add(node)
        self.peak = max(self.peak, len(self.active))
        response = await super().complete(**kwargs)
        if not response.tool_calls:  # the final answer: the slot is released after this returns
            self.active.discard(node)
        return response


TOPIC = r"\bTOPIC\d\b"


@pytest.mark.parametrize("limit", [1, 3])
async def test_peak_concurrency_never_exceeds_the_limit(
    store: Store, make_settings: ScriptFactory, limit: int
) -> None:
    words = [f"TOPIC{i}" for i in range(5)]
    convs = [_conv(w, _tool_turn(f"{w}-q"), {"content": f"answer {i}"}) for i, w in enumerate(words)]
    settings = make_settings(convs, max_parallel_team_nodes=limit)
    plan = TeamPlan(
        mode="parallel", nodes=[_node(f"n{i}", f"study {w}", tools=["lookup"]) for i, w in enumerate(words)]
    )
    ctx = await _ctx(store)
    reset_scripted_stats()
    gateway = _SlotWatch(settings)
    running = asyncio.create_task(_run(_scheduler(store, settings, gateway), plan, ctx))
    # Every call waits at the gate, so the first `limit` nodes keep their slots: the limit is
    # really used, and a scheduler that let more in would start them now, not later.
    await gateway.wait_arrived(TOPIC, limit)
    assert gateway.peak == limit and gateway.holding[TOPIC] == limit
    gateway.release(TOPIC)
    team = await asyncio.wait_for(running, HANG_S)
    assert [r.status for r in team.node_results] == ["succeeded"] * 5
    stats = scripted_stats()
    assert len(stats.requests) == 10
    assert gateway.peak == limit  # over the whole run, tool turns included
    assert stats.peak_in_flight <= limit


async def test_results_follow_graph_order_not_completion_order(
    store: Store, make_settings: ScriptFactory
) -> None:
    convs = [
        _conv("SLOWWORD", {"content": "slow answer"}),
        _conv("FASTWORD", {"content": "fast answer"}),
        _conv("MIDWORD", {"content": "mid answer"}),
    ]
    settings = make_settings(convs)
    plan = TeamPlan(
        mode="parallel",
        nodes=[_node("slow", "do SLOWWORD"), _node("fast", "do FASTWORD"), _node("mid", "do MIDWORD")],
    )
    finished: list[str | None] = []
    done = {node: asyncio.Event() for node in ("slow", "fast", "mid")}

    def progress(p: RunStep) -> None:
        if p.phase == "finished" and p.node_id is not None:
            finished.append(p.node_id)
            done[p.node_id].set()

    ctx = await _ctx(store)
    gateway = GatedGateway(settings, "SLOWWORD", "FASTWORD", "MIDWORD")
    running = asyncio.create_task(_run(_scheduler(store, settings, gateway, progress), plan, ctx))
    for word, node in (("FASTWORD", "fast"), ("MIDWORD", "mid"), ("SLOWWORD", "slow")):
        await gateway.wait_arrived(word)
        gateway.release(word)
        await asyncio.wait_for(done[node].wait(), HANG_S)
    team = await asyncio.wait_for(running, HANG_S)
    assert finished == ["fast", "mid", "slow"]
    assert [r.node_id for r in team.node_results] == ["slow", "fast", "mid"]
    assert [r.output_text for r in team.node_results] == ["slow answer", "fast answer", "mid answer"]
    assert team.plan_id == "team" and team.mode == "parallel" and team.warnings == []


async def test_dag_passes_upstream_evidence_and_runs_after_a_failed_dependency(
    store: Store, make_settings: ScriptFactory, gateway_for: GatewayFor
) -> None:
    convs = [
        _conv("GATHERWORD", _tool_turn("alpha"), {"content": "gathered summary"}),
        _conv("BROKENWORD", {"error": "server_error"}),
        _conv("COMBINEWORD", {"content": "combined answer"}),
    ]
    settings = make_settings(convs, llm_num_retries=0)
    plan = TeamPlan(
        mode="dag",
        nodes=[
            _node("combine", "COMBINEWORD the findings", "gather", "broken"),
            _node("gather", "GATHERWORD facts", tools=["lookup"]),
            _node("broken", "BROKENWORD step"),
        ],
    )
    ctx = await _ctx(store)
    team = await _run(_scheduler(store, settings, gateway_for(settings)), plan, ctx)
    assert [r.node_id for r in team.node_results] == ["gather", "broken", "combine"]
    gather, broken, combine = team.node_results
    assert gather.status == "succeeded" and gather.finish_reason == FinishReason.STOP
    assert (
        broken.status == "failed"
        and broken.finish_reason == FinishReason.LLM_ERROR
        and "server error" in (broken.error or "")
    )
    assert combine.status == "succeeded" and combine.output_text == "combined answer"
    assert team.warnings and "broken" in team.warnings[0]

    assert combine.evidence is not None
    started = (await store.get_run_event_records(combine.evidence.session_id, combine.evidence.run_id))[0]
    system, user = started.payload["input_messages"]
    assert system["role"] == "system" and "You are a researcher." in system["content"]
    assert "node 'combine'" in system["content"]
    text = user["content"]
    assert text.index("COMBINEWORD the findings") < text.index("overall question for the team")
    assert "result for alpha" in text and "gathered summary" in text  # upstream tool result and output
    assert "Upstream node 'broken' (status: failed, finish_reason: llm_error" in text
    assert "<EXTERNAL-CONTENT" in text
    # Node sessions are children of the main session, labelled with the node id.
    sessions = {s.label: s for s in await store.list_sessions(ctx.task_id) if s.kind == "node"}
    assert set(sessions) == {"gather", "broken", "combine"}
    assert all(s.parent_session_id == ctx.main_session_id for s in sessions.values())


class _ExplodingGateway(GatedGateway):
    """Raises a non-LLM exception once a node whose task says EXPLODEWORD has a tool result.

    FINEWORD's call waits until then, so that sibling is certainly still running when it happens.
    """

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, "FINEWORD")

    async def complete(self, **kwargs: Any) -> LLMResponse:
        messages = kwargs["messages"]
        if "EXPLODEWORD" in request_text(messages) and any(m.get("role") == "tool" for m in messages):
            self.release("FINEWORD")
            raise RuntimeError("disk on fire")
        return await super().complete(**kwargs)


async def test_budget_error_and_exception_nodes_keep_tool_evidence_in_the_packet(
    store: Store, make_settings: ScriptFactory
) -> None:
    convs = [
        {"model": "agent", "match": SYNTH_MATCH, "turns": [{"content": "final synthesis"}]},
        _conv("BUDGETWORD", _tool_turn("budget-q"), {"error": "server_error"}),
        _conv("CRASHWORD", _tool_turn("crash-q"), {"error": "server_error"}),
        _conv("EXPLODEWORD", _tool_turn("explode-q"), {"content": "never reached"}),
        _conv("FINEWORD", {"content": "fine answer"}),
    ]
    settings = make_settings(convs, llm_num_retries=0)
    gateway = _ExplodingGateway(settings)
    plan = TeamPlan(
        mode="parallel",
        nodes=[
            _node("budget", "BUDGETWORD work", tools=["lookup"], max_tool_iterations=1),
            _node("crash", "CRASHWORD work", tools=["lookup"]),
            _node("explode", "EXPLODEWORD work", tools=["lookup"]),
            _node("fine", "FINEWORD work"),
        ],
    )
    ctx = await _ctx(store)
    scheduler = _scheduler(store, settings, gateway)
    team = await _run(scheduler, plan, ctx)
    budget, crash, explode, fine = team.node_results
    assert (budget.status, budget.finish_reason) == (
        "budget_exhausted",
        FinishReason.MAX_TOOL_ITERATIONS_UNFINALIZED,
    )
    assert (crash.status, crash.finish_reason) == ("failed", FinishReason.LLM_ERROR)
    assert explode.status == "failed" and explode.error == "RuntimeError: disk on fire"
    assert fine.status == "succeeded" and fine.output_text == "fine answer"  # siblings were not cancelled
    for result, query in ((budget, "budget-q"), (crash, "crash-q"), (explode, "explode-q")):
        assert result.evidence is not None
        assert [t.content for t in result.evidence.tool_results] == [f"result for {query}"]
    assert explode.evidence is not None and any(
        "never recorded its end" in w for w in explode.evidence.warnings
    )

    outcome = await scheduler.synthesize(
        plan=plan,
        team=team,
        task_text="overall question for the team",
        session_id=ctx.main_session_id,
        history=[],
        task_id=ctx.task_id,
        attempt_id=ctx.attempt_id,
    )
    assert outcome.output_text == "final synthesis"
    packet = await build_attempt_packet(
        store,
        task_id=ctx.task_id,
        attempt_index=1,
        main_session_id=ctx.main_session_id,
        main_run_id=outcome.run_id,
        teams=[team],
        final_output=outcome.output_text,
    )
    assert packet.main_run is not None and packet.main_run.run_id == outcome.run_id
    assert [n.node_id for n in packet.team_node_results] == ["budget", "crash", "explode", "fine"]
    assert {r.run_id for r in packet.team_runs} == {
        n.evidence.run_id for n in team.node_results if n.evidence
    }
    assert packet.final_output == "final synthesis"
    rendered = render_packet(packet).text
    for query in ("budget-q", "crash-q", "explode-q"):
        assert f"result for {query}" in rendered
    assert "status: budget_exhausted" in rendered and "disk on fire" in rendered


@pytest.mark.parametrize(("budget", "offered"), [(0, ()), (1, ("lookup",))])
async def test_synthesis_is_offered_no_tools_by_default(
    store: Store, make_settings: ScriptFactory, gateway_for: GatewayFor, budget: int, offered: tuple[str, ...]
) -> None:
    convs = [
        # Turn 0 stands for the earlier answer in the history; synthesis is the session's second turn.
        {
            "model": "agent",
            "match": SYNTH_MATCH,
            "turns": [{"content": "unused"}, {"content": "the synthesis"}],
        },
        _conv("NODEWORD", _tool_turn("n-q"), {"content": "node found X"}),
    ]
    settings = make_settings(convs)
    plan = TeamPlan(
        mode="sequence",
        nodes=[_node("only", "NODEWORD work", tools=["lookup"])],
        synthesis_max_tool_iterations=budget,
    )
    ctx = await _ctx(store)
    scheduler = _scheduler(store, settings, gateway_for(settings))
    team = await _run(scheduler, plan, ctx)
    reset_scripted_stats()
    history = [{"role": "user", "content": "earlier question"}, {"role": "assistant", "content": "earlier"}]
    outcome = await scheduler.synthesize(
        plan=plan,
        team=team,
        task_text="overall question for the team",
        session_id=ctx.main_session_id,
        history=history,
        task_id=ctx.task_id,
        attempt_id=ctx.attempt_id,
    )
    assert outcome.output_text == "the synthesis" and outcome.finish_reason == FinishReason.STOP
    (request,) = scripted_stats().requests
    assert request.tool_names == offered
    assert request.message_count == 3  # history kept, one new user message
    events = await store.get_run_event_records(ctx.main_session_id, outcome.run_id)
    started = events[0].payload
    assert started["run_kind"] == "synthesis"
    assert started["max_tool_iterations"] == budget and started["include_tools"] is (budget > 0)
    (message,) = started["input_messages"]
    content = message["content"]
    assert content.startswith("Task:\noverall question for the team\n")
    assert "result for n-q" in content and "node found X" in content
    assert "Team node 'only' (role: You are a researcher., status: succeeded" in content
    assert content.endswith(SYNTHESIS_INSTRUCTIONS)
    assert "source of truth" in content and "missing or uncertain" in content
    assert "Do not repeat tool calls" in content


async def test_invalid_plans_are_refused_before_any_model_call(
    store: Store, make_settings: ScriptFactory, gateway_for: GatewayFor
) -> None:
    settings = make_settings([_conv("AWORD", {"content": "x"})])
    plan = TeamPlan(
        mode="parallel",
        nodes=[_node("a", "AWORD", tools=["lookup"]), _node("b", "AWORD", tools=["web_search"])],
    )
    ctx = await _ctx(store)
    reset_scripted_stats()
    with pytest.raises(
        PlanError, match="node 'b' uses unknown tool\\(s\\) web_search; available tools: lookup"
    ):
        await _run(_scheduler(store, settings, gateway_for(settings)), plan, ctx)
    assert scripted_stats().requests == []
    assert [s.kind for s in await store.list_sessions(ctx.task_id)] == ["main"]
    assert await store.list_runs(task_id=ctx.task_id) == []


async def test_cancelling_one_node_leaves_its_siblings_running(
    store: Store, make_settings: ScriptFactory
) -> None:
    convs = [
        _conv("SLOWPOKE", _tool_turn("slow-q"), {"content": "too late"}),
        _conv("QUICKWORD", {"content": "quick answer"}),
    ]
    settings = make_settings(convs)
    plan = TeamPlan(
        mode="parallel",
        nodes=[_node("slowpoke", "SLOWPOKE job", tools=["lookup"]), _node("quick", "QUICKWORD job")],
    )
    ctx = await _ctx(store)
    # The slowpoke's second call (after its tool result) never gets an answer; the quick node
    # answers only after the slowpoke is cancelled, so it is certainly running when that happens.
    gateway = GatedGateway(settings, "result for slow-q", "QUICKWORD")
    scheduler = _scheduler(store, settings, gateway)
    running = asyncio.create_task(_run(scheduler, plan, ctx))
    await gateway.wait_arrived("result for slow-q")
    await gateway.wait_arrived("QUICKWORD")
    assert scheduler.cancel_node("slowpoke") is True
    assert scheduler.cancel_node("no-such-node") is False
    gateway.release("QUICKWORD")
    team = await asyncio.wait_for(running, HANG_S)
    slow, quick = team.node_results
    assert (slow.status, slow.finish_reason) == ("cancelled", FinishReason.CANCELLED)
    assert slow.evidence is not None and slow.evidence.finish_reason == FinishReason.CANCELLED
    assert [t.content for t in slow.evidence.tool_results] == ["result for slow-q"]
    assert quick.status == "succeeded" and quick.output_text == "quick answer"


async def test_cancelling_the_team_run_cancels_every_node_and_records_it(
    store: Store, make_settings: ScriptFactory
) -> None:
    convs = [_conv(w, {"content": "late"}) for w in ("ONEWORD", "TWOWORD")]
    settings = make_settings(convs)
    plan = TeamPlan(mode="parallel", nodes=[_node("one", "ONEWORD"), _node("two", "TWOWORD")])
    ctx = await _ctx(store)
    gateway = GatedGateway(settings, "ONEWORD", "TWOWORD")  # never released: both calls hang
    running = asyncio.create_task(_run(_scheduler(store, settings, gateway), plan, ctx))
    await gateway.wait_arrived("ONEWORD")
    await gateway.wait_arrived("TWOWORD")
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    runs = await store.list_runs(task_id=ctx.task_id)
    assert sorted(r.node_id or "" for r in runs) == ["one", "two"]
    assert {r.finish_reason for r in runs} == {FinishReason.CANCELLED}


async def test_three_parallel_nodes_writing_over_200_events_each_lose_nothing(
    store: Store, make_settings: ScriptFactory, gateway_for: GatewayFor
) -> None:
    rounds, calls = 9, 20
    words = ["WRITERA", "WRITERB", "WRITERC"]
    convs = []
    for w in words:
        turns = [
            _tool_turn(*(f"{w}-r{r}-c{c}" for c in range(calls)), delay_s=0.002 * (r % 3))
            for r in range(rounds)
        ]
        convs.append(_conv(w, *turns, {"content": f"{w} done"}))
    settings = make_settings(convs, max_tool_iterations=rounds)
    plan = TeamPlan(mode="parallel", nodes=[_node(w.lower(), f"{w} job", tools=["lookup"]) for w in words])
    ctx = await _ctx(store)
    team = await _run(_scheduler(store, settings, gateway_for(settings)), plan, ctx)
    assert [r.finish_reason for r in team.node_results] == [FinishReason.MAX_TOOL_ITERATIONS_FINALIZED] * 3
    # run_started + rounds x (snapshot + response + calls' results)
    #   + finalization_requested + snapshot + response + run_finished
    expected = 1 + rounds * (2 + calls) + 4
    assert expected > 200
    all_ids: list[int] = []
    for w, result in zip(words, team.node_results, strict=True):
        assert result.evidence is not None
        events = await store.get_session_events(result.evidence.session_id)
        assert [e.seq for e in events] == list(range(1, expected + 1))
        assert all(e.run_id == result.evidence.run_id for e in events)
        kinds = Counter(e.kind for e in events)
        assert kinds["tool_result_recorded"] == rounds * calls and "tool_call_started" not in kinds
        contents = sorted(e.content or "" for e in events if e.kind == "tool_result_recorded")
        assert contents == sorted(f"result for {w}-r{r}-c{c}" for r in range(rounds) for c in range(calls))
        assert len(result.evidence.tool_results) == rounds * calls
        all_ids.extend(e.id for e in events)
    assert len(all_ids) == len(set(all_ids)) == 3 * expected
    assert len(await store.get_task_events(ctx.task_id)) == 3 * expected


async def test_concurrent_writers_to_one_session_get_contiguous_unique_seqs(store: Store) -> None:
    """The store's write lock, proven directly: 3 writers x 200 single-event appends to one session."""
    session = await store.create_session(task_id=None, kind="main")

    async def writer(name: str) -> None:
        for i in range(200):
            await store.append_event(session.id, "probe", {"writer": name, "i": i})
            if i % 7 == 0:
                await asyncio.sleep(0)

    await asyncio.gather(*(writer(n) for n in "abc"))
    events = await store.get_session_events(session.id)
    assert [e.seq for e in events] == list(range(1, 601))
    for name in "abc":
        assert [e.payload["i"] for e in events if e.payload["writer"] == name] == list(range(200))
