"""Turns per second through AgentLoop against bare litellm.acompletion, measured in one run.

The scripted model answers with zero delay, so the difference is what our loop adds per turn:
the custom provider, event writes, tool dispatch. Aim: at most 1.5x the bare call per turn.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir, scripted_settings
from core.agent import AgentLoop
from core.events import EventBus
from core.llm import LLMGateway
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry

TURNS_PER_RUN = 20
RUNS = 10


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


async def bench_bare() -> float:
    import litellm

    messages = [{"role": "user", "content": "go"}]
    await litellm.acompletion(model="gpt-4o-mini", messages=messages, mock_response="done")
    n = RUNS * TURNS_PER_RUN
    started = time.perf_counter()
    for i in range(n):
        messages.append({"role": "assistant", "content": f"turn {i}"})
        await litellm.acompletion(model="gpt-4o-mini", messages=messages, mock_response="done")
    return n / (time.perf_counter() - started)


async def main() -> None:
    bare = await bench_bare()
    ours = await bench_loop(stream=False)
    streamed = await bench_loop(stream=True)
    print(f"bare litellm.acompletion(mock_response): {bare:8.1f} turns/s ({1000 / bare:.2f} ms/turn)")
    print(f"AgentLoop, scripted zero-delay model:    {ours:8.1f} turns/s ({1000 / ours:.2f} ms/turn)")
    print(f"AgentLoop, same model streamed:          {streamed:8.1f} turns/s ({1000 / streamed:.2f} ms/turn)")
    print(f"cost ratio per turn (ours / bare): {bare / ours:.2f}x  (aim <= 1.5x)")
    print(f"streamed / unstreamed per turn: {ours / streamed:.2f}x  (aim <= 1.1x)")


if __name__ == "__main__":
    asyncio.run(main())
