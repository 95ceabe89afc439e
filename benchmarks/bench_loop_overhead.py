"""Turns per second through AgentLoop against bare litellm.acompletion, measured in one run.

The scripted model answers with zero delay, so the difference is what our loop adds per turn:
the custom provider, event writes, tool dispatch. Aim (issue #27): at most 1.2x the bare call per turn, as the
median of five rounds (min and max reported beside it).

The floor is fair to the bare call: it sends the same transcript the loop sends (a user message,
then one assistant tool call and its result per turn, restarted every run of ``TURNS_PER_RUN``)
with the same tool schema, so litellm's per-message work is the same on both sides. A round
alternates single 20-turn runs of the bare call and the loop and compares their medians, so the
ratio holds when the machine is shared; the load average is printed with the figures.

A sixth side, bare calls each followed by the sync ``noop`` through ``ToolRegistry.execute``,
says how much of the gap is the tool's worker-thread hop alone.

Two layers between the two are timed in the same rounds, on the same transcript, so each run says
where the gap sits: litellm with our scripted provider (the model this loop is measured against,
reached the way the gateway reaches it), and ``LLMGateway.complete`` (that, plus the gateway's
arguments, usage record and parsed reply). What the loop adds on top of the gateway is its own:
events, the tool call in its worker thread, the run's rows.

Run: ``.venv/bin/python benchmarks/bench_loop_overhead.py [--runs 5]`` (no network needed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir, scripted_settings
from core.agent import AgentLoop
from core.events import EventBus
from core.llm import LLMGateway
from core.llm.gateway import _import_litellm
from core.profiles import ModelRole
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry

TURNS_PER_RUN = 20
PAIRS = 30  # alternated 20-turn runs of each side per measurement round


def noop(query: str) -> str:
    """Return the query."""
    return query


Runner = Callable[[], Awaitable[None]]


def _script_turns() -> list[dict[str, Any]]:
    """The scripted model's run: a ``noop`` call per turn, then an answer."""
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "noop", "arguments": {"query": f"q{i}"}}]} for i in range(TURNS_PER_RUN - 1)
    ]
    turns.append({"content": "done"})
    return turns


async def loop_runner(stream: bool = False) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """One 20-turn agent run per call, on a workspace made once; and how to close it."""
    folder = scratch_dir()
    settings = scripted_settings(
        folder,
        [{"model": "agent", "turns": _script_turns()}],
        max_tool_iterations=TURNS_PER_RUN,
        stream_agent=stream,
    )
    store = await Store.open(settings.db_url)
    tools = ToolRegistry()
    tools.register(noop)
    bus = EventBus()
    if stream:
        bus.subscribe(lambda _notice: None)  # a listener, as the desk is, so text pieces are published
    ctx = RunContext(store=store, gateway=LLMGateway(settings), tools=tools, settings=settings, bus=bus)
    loop = AgentLoop(ctx)

    async def one_run() -> None:
        session = await store.create_session(task_id=None, kind="main")
        out = await loop.run(
            session_id=session.id,
            history=[],
            new_messages=[{"role": "user", "content": "go"}],
            model="scripted/agent",
        )
        assert out.finish_reason == "stop", out

    return one_run, store.close


def _tool_schema() -> list[dict[str, Any]]:
    tools = ToolRegistry()
    tools.register(noop)
    return tools.schemas()


def _grow(messages: list[dict[str, Any]], i: int) -> None:
    """The turn's assistant tool call and its result, as the loop appends them."""
    call_id = f"call_{i}_0"
    arguments = json.dumps({"query": f"q{i}"})
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "noop", "arguments": arguments}}
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": call_id, "name": "noop", "content": f"q{i}"})


def layer_runners() -> tuple[Runner, Runner]:
    """litellm with the scripted provider, and the gateway over it: the loop's transcript, no loop."""
    settings = scripted_settings(scratch_dir(), [{"model": "agent", "turns": _script_turns()}])
    litellm = _import_litellm()  # registers the scripted provider, as the gateway's first call does
    gateway = LLMGateway(settings)
    schema = _tool_schema()
    script = str(settings.script)

    async def provider() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for i in range(TURNS_PER_RUN):
            await litellm.acompletion(
                model="scripted/agent", api_base=script, messages=messages, tools=schema, num_retries=0
            )
            _grow(messages, i)

    async def through_gateway() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for i in range(TURNS_PER_RUN):
            await gateway.complete(
                model="scripted/agent", messages=messages, tools=schema, role=ModelRole.AGENT
            )
            _grow(messages, i)

    return provider, through_gateway


def bare_with_tool_runner() -> Runner:
    """The bare calls, each followed by the turn's ``noop`` through ``ToolRegistry.execute``.

    The registry runs a sync tool on a worker thread (so a hung tool can be abandoned at its time
    limit and the desk keeps painting), and waking that thread after a model call's ~2.5 ms of
    work costs far more than a wake right after the last one: on this project's 2-vCPU VM a bare
    thread round trip measured 88 us back to back and 146 us after 2.5 ms of busy main thread.
    Timed beside the rest, it says how much of the loop's gap is that hop alone.
    """
    import litellm

    schema = _tool_schema()
    tools = ToolRegistry()
    tools.register(noop)

    async def one_run() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for i in range(TURNS_PER_RUN):
            await litellm.acompletion(
                model="gpt-4o-mini", messages=messages, tools=schema, mock_response="done"
            )
            if i < TURNS_PER_RUN - 1:  # the loop's last turn is the answer: no tool
                await tools.execute("noop", json.dumps({"query": f"q{i}"}))
            _grow(messages, i)

    return one_run


def bare_runner() -> Runner:
    """The same transcript and tools as the loop's runs, straight into ``litellm.acompletion``."""
    import litellm

    schema = _tool_schema()

    async def one_run() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for i in range(TURNS_PER_RUN):
            await litellm.acompletion(
                model="gpt-4o-mini", messages=messages, tools=schema, mock_response="done"
            )
            _grow(messages, i)

    return one_run


async def _ms_per_turn(run: Runner) -> float:
    started = time.perf_counter()
    await run()
    return (time.perf_counter() - started) * 1000 / TURNS_PER_RUN


def _spread(values: list[float], fmt: str) -> str:
    return f"{min(values):{fmt}} / {statistics.median(values):{fmt}} / {max(values):{fmt}}"


async def main(runs: int) -> dict[str, list[float]]:
    """Each round alternates one run of each side ``PAIRS`` times and keeps each side's median.

    Alternating single runs, rather than timing ten runs of one side and then ten of the other,
    puts both sides under the same moment's load: on a shared machine bare litellm alone moved
    between 2.2 and 3.8 ms per turn from one block to the next, more than the gap measured.
    """
    load_before = os.getloadavg()
    bare = bare_runner()
    with_tool = bare_with_tool_runner()
    provider, through_gateway = layer_runners()
    ours, close_ours = await loop_runner(stream=False)
    streamed, close_streamed = await loop_runner(stream=True)
    sides: list[tuple[str, Runner]] = [
        ("bare", bare),
        ("tool", with_tool),
        ("provider", provider),
        ("gateway", through_gateway),
        ("ours", ours),
        ("streamed", streamed),
    ]
    for _ in range(2):  # warm-up: imports, provider registration
        for _name, run in sides:
            await run()
    medians: dict[str, list[float]] = {name: [] for name, _ in sides}
    for _ in range(runs):
        pairs: dict[str, list[float]] = {name: [] for name, _ in sides}
        for _ in range(PAIRS):
            for name, run in sides:
                pairs[name].append(await _ms_per_turn(run))
        for name, values in pairs.items():
            medians[name].append(statistics.median(values))
    await close_ours()
    await close_streamed()
    load_after = os.getloadavg()
    bare_ms, ours_ms, streamed_ms = medians["bare"], medians["ours"], medians["streamed"]
    ratio = [o / b for o, b in zip(ours_ms, bare_ms, strict=True)]
    streamed_ratio = [s / o for s, o in zip(streamed_ms, ours_ms, strict=True)]
    layers = {
        name: [v / b for v, b in zip(medians[name], bare_ms, strict=True)]
        for name in ("provider", "gateway", "tool")
    }
    print(
        f"{runs} rounds, each the medians of {PAIRS} alternated {TURNS_PER_RUN}-turn runs per side; "
        "figures are min / median / max over the rounds"
    )
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    print(f"bare litellm.acompletion(mock_response): {_spread(bare_ms, '.2f')} ms/turn")
    print(f"AgentLoop, scripted zero-delay model:    {_spread(ours_ms, '.2f')} ms/turn")
    print(f"AgentLoop, same model streamed:          {_spread(streamed_ms, '.2f')} ms/turn")
    print(f"cost ratio per turn (ours / bare):       {_spread(ratio, '.3f')} x  (aim: median <= 1.2x)")
    print(
        f"streamed / unstreamed per turn:          {_spread(streamed_ratio, '.2f')} x  "
        "(the scripted provider streams through litellm's own wrapper; openai/ streams: bench_stream_cost)"
    )
    print("where the gap sits, each layer per turn against bare (same rounds, same transcript):")
    print(f"  litellm + the scripted provider:       {_spread(layers['provider'], '.3f')} x")
    print(f"  + LLMGateway.complete:                 {_spread(layers['gateway'], '.3f')} x")
    print(f"  + AgentLoop (events, tool, run rows):  {_spread(ratio, '.3f')} x")
    print(f"bare + the sync tool on its worker thread (no loop): {_spread(layers['tool'], '.3f')} x")
    return {
        "bare_ms": bare_ms,
        "ours_ms": ours_ms,
        "streamed_ms": streamed_ms,
        "ratio": ratio,
        "provider_ratio": layers["provider"],
        "gateway_ratio": layers["gateway"],
        "tool_ratio": layers["tool"],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.runs))
