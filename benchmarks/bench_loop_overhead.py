"""Turns per second through AgentLoop against bare litellm.acompletion, measured in one run.

The scripted model answers with zero delay, so the difference is what our loop adds per turn:
the custom provider, event writes, tool dispatch. Aim (issue #27): at most 1.2x the bare call per turn, as the
median of five runs (min and max reported beside it).

The floor is fair to the bare call: it sends the same transcript the loop sends (a user message,
then one assistant tool call and its result per turn, restarted every run of ``TURNS_PER_RUN``)
with the same tool schema, so litellm's per-message work is the same on both sides. Each run
measures the bare call and the loop back to back, so the ratio holds when the machine is shared;
the load average is printed with the figures.

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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir, scripted_settings
from core.agent import AgentLoop
from core.events import EventBus
from core.llm import LLMGateway
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry

TURNS_PER_RUN = 20
RUNS = 10  # agent runs per measurement: 200 turns


def noop(query: str) -> str:
    """Return the query."""
    return query


async def bench_loop(stream: bool = False) -> float:
    folder = scratch_dir()
    turns = [
        {"tool_calls": [{"name": "noop", "arguments": {"query": f"q{i}"}}]} for i in range(TURNS_PER_RUN - 1)
    ]
    turns.append({"content": "done"})
    settings = scripted_settings(
        folder, [{"model": "agent", "turns": turns}], max_tool_iterations=TURNS_PER_RUN, stream_agent=stream
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

    await one_run()  # warm-up: imports, provider registration
    started = time.perf_counter()
    for _ in range(RUNS):
        await one_run()
    elapsed = time.perf_counter() - started
    await store.close()
    return RUNS * TURNS_PER_RUN / elapsed


def _tool_schema() -> list[dict[str, Any]]:
    tools = ToolRegistry()
    tools.register(noop)
    return tools.schemas()


async def bench_bare() -> float:
    """The same transcript and tools as the loop's runs, straight into ``litellm.acompletion``."""
    import litellm

    schema = _tool_schema()

    async def one_run() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for i in range(TURNS_PER_RUN):
            await litellm.acompletion(
                model="gpt-4o-mini", messages=messages, tools=schema, mock_response="done"
            )
            call_id = f"call_{i}_0"
            arguments = json.dumps({"query": f"q{i}"})
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "noop", "arguments": arguments},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "name": "noop", "content": f"q{i}"})

    await one_run()  # warm-up
    started = time.perf_counter()
    for _ in range(RUNS):
        await one_run()
    return RUNS * TURNS_PER_RUN / (time.perf_counter() - started)


def _spread(values: list[float], fmt: str) -> str:
    return f"{min(values):{fmt}} / {statistics.median(values):{fmt}} / {max(values):{fmt}}"


async def main(runs: int) -> dict[str, list[float]]:
    load_before = os.getloadavg()
    bare_ms: list[float] = []
    ours_ms: list[float] = []
    streamed_ms: list[float] = []
    for _ in range(runs):
        bare_ms.append(1000 / await bench_bare())
        ours_ms.append(1000 / await bench_loop(stream=False))
        streamed_ms.append(1000 / await bench_loop(stream=True))
    load_after = os.getloadavg()
    ratio = [o / b for o, b in zip(ours_ms, bare_ms, strict=True)]
    streamed_ratio = [s / o for s, o in zip(streamed_ms, ours_ms, strict=True)]
    print(f"{runs} runs of {RUNS * TURNS_PER_RUN} turns each; figures are min / median / max")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    print(f"bare litellm.acompletion(mock_response): {_spread(bare_ms, '.2f')} ms/turn")
    print(f"AgentLoop, scripted zero-delay model:    {_spread(ours_ms, '.2f')} ms/turn")
    print(f"AgentLoop, same model streamed:          {_spread(streamed_ms, '.2f')} ms/turn")
    print(f"cost ratio per turn (ours / bare):       {_spread(ratio, '.2f')} x  (aim: median <= 1.2x)")
    print(
        f"streamed / unstreamed per turn:          {_spread(streamed_ratio, '.2f')} x  (aim: median <= 1.2x)"
    )
    return {"bare_ms": bare_ms, "ours_ms": ours_ms, "streamed_ms": streamed_ms, "ratio": ratio}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.runs))
