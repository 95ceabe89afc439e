"""Per-turn cost of a full agent turn over loopback HTTP against a bare litellm call, in one run.

Both sides talk to the same loopback fake OpenAI-compatible server (tests/fakes/llm_server.py) on
litellm's real HTTP path, configured the same way (litellm's OpenAI endpoint settings), with the same tool schema and a transcript that grows the same way, so
the difference is what our loop adds per turn: the gateway, snapshots and event writes, tool
dispatch. Measured non-streamed and streamed (the bare side assembles the stream with litellm's
chunk builder; the loop side streams only when the gateway offers it). Aim: at most 1.3x.

Then streamed against non-streamed per turn on the same server, for the loop and for bare litellm:
the loop's ratio beside litellm's own shows how much of a streamed turn's extra cost is ours.
Aim: the loop's streamed turn at most 1.2x its non-streamed one. (The loop reads ``openai/``
streams past litellm's stream wrapper, core/llm/streaming.py; the bare side still goes through it.
These are wall-clock figures with the fake server in this process; bench_stream_cost.py gives the
client's CPU alone, layer by layer, down to raw httpx.)

Last, when ``tests/realmodel/provision.py`` has provisioned the real llama-cpp-python server and
SmolLM2 model (``make real-model``), streamed against non-streamed calls to that server on a free
loopback port, through the gateway and through the bare OpenAI SDK: a few short answers each way,
interleaved, with the client's CPU per call beside the wall time (the model's own work is in the
server's process). ``--no-real`` skips it; unprovisioned, it says so and is skipped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir
from core.agent import AgentLoop
from core.config import load_settings
from core.events import EventBus
from core.llm import LLMGateway
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

TURNS_PER_RUN = 20
RUNS = 5
MODEL = "openai/bench-model"


def noop(query: str) -> str:
    """Return the query."""
    return query


def _responder(request: RecordedRequest) -> Reply:
    if (request.body or {}).get("tools") and (request.body or {}).get("tool_choice") != "none":
        return Reply.tools(("noop", {"query": f"q{len(request.messages)}"}))
    return Reply.text("done")


async def bench_loop(server: FakeLLMServer, *, stream: bool) -> float | None:
    folder = scratch_dir()
    settings = load_settings(
        db_url=f"sqlite+aiosqlite:///{folder / 'ws.sqlite3'}",
        agent_model=MODEL,
        max_tool_iterations=TURNS_PER_RUN - 1,
    )
    store = await Store.open(settings.db_url)
    tools = ToolRegistry()
    tools.register(noop)
    gateway = LLMGateway(settings)
    bus = EventBus()
    if stream:  # the loop streams only when someone watches, as the desk does
        bus.subscribe(lambda notice: None)
    ctx = RunContext(store=store, gateway=gateway, tools=tools, settings=settings, bus=bus)
    loop = AgentLoop(ctx)

    async def one_run() -> None:
        session = await store.create_session(task_id=None, kind="main")
        out = await loop.run(
            session_id=session.id,
            history=[],
            new_messages=[{"role": "user", "content": "go"}],
            model=MODEL,
        )
        assert out.usable, out
        assert out.iterations == TURNS_PER_RUN, out.iterations

    await one_run()  # warm-up: imports, the HTTP client, provider lookups
    started = time.perf_counter()
    for _ in range(RUNS):
        await one_run()
    elapsed = time.perf_counter() - started
    await store.close()
    return RUNS * TURNS_PER_RUN / elapsed


async def bench_bare(server: FakeLLMServer, *, stream: bool) -> float:
    import litellm

    schemas = ToolRegistry()
    schemas.register(noop)
    tools = schemas.schemas()

    async def call(messages: list[dict[str, Any]]) -> Any:
        if not stream:
            return await litellm.acompletion(model=MODEL, messages=messages, tools=tools)
        chunks = [
            c
            async for c in await litellm.acompletion(
                model=MODEL,
                messages=messages,
                tools=tools,
                stream=True,
            )
        ]
        return litellm.stream_chunk_builder(chunks, messages=messages)

    async def one_run() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for _ in range(TURNS_PER_RUN - 1):
            response = await call(messages)
            call_ = response.choices[0].message.tool_calls[0]
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_.id,
                            "type": "function",
                            "function": {"name": "noop", "arguments": call_.function.arguments},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_.id, "name": "noop", "content": "q"})
        messages.append({"role": "user", "content": "answer now"})
        final = await litellm.acompletion(model=MODEL, messages=messages)
        assert final.choices[0].message.content == "done"

    await one_run()
    started = time.perf_counter()
    for _ in range(RUNS):
        await one_run()
    return RUNS * TURNS_PER_RUN / (time.perf_counter() - started)


REAL_TURNS = 6
REAL_MAX_TOKENS = 16


async def bench_real_server() -> None:
    """Streamed against unstreamed calls to the real llama.cpp-family server, if provisioned."""
    import openai

    from core.profiles import ModelProfile, ModelRole
    from tests.realmodel.server import LlamaServer, provisioned

    where = provisioned()
    if where is None:
        print("real llama.cpp server: skipped (not provisioned; `make real-model` provisions it)")
        return
    server = LlamaServer(
        python=where["python"],
        model=where["model"],
        model_name=where["model_name"],
        log=scratch_dir() / "llama-server.log",
    )
    model = f"openai/{where['model_name']}"
    profile = ModelProfile(
        model=model, api_base=server.api_base, no_api_key=True, temperature=0, max_tokens=REAL_MAX_TOKENS
    )
    settings = load_settings(agent_model=model, profiles={ModelRole.AGENT: profile})
    gateway = LLMGateway(settings)
    server.start()
    try:
        sdk = openai.AsyncOpenAI(base_url=server.api_base, api_key="none")

        async def call(side: str, stream: bool, messages: list[dict[str, Any]]) -> None:
            if side == "gateway":
                await gateway.complete(model=model, role=ModelRole.AGENT, messages=messages, stream=stream)
                return
            extra: dict[str, Any] = (
                {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
            )
            reply = await sdk.chat.completions.create(
                model=where["model_name"],
                messages=messages,
                max_tokens=REAL_MAX_TOKENS,
                temperature=0,
                **extra,
            )  # type: ignore[call-overload]
            if stream:
                _ = [chunk async for chunk in reply]

        cost: dict[tuple[str, bool], list[tuple[float, float]]] = {}
        for turn in range(REAL_TURNS + 1):  # the first round warms the server and the clients up
            for side in ("gateway", "OpenAI SDK"):
                for stream in (False, True):
                    messages = [{"role": "user", "content": f"Name one colour. ({turn})"}]
                    wall, cpu = time.perf_counter(), time.process_time()
                    await call(side, stream, messages)
                    if turn:
                        spent = (time.perf_counter() - wall, time.process_time() - cpu)
                        cost.setdefault((side, stream), []).append(spent)
        await sdk.close()
    finally:
        server.stop()
    print(
        f"real llama.cpp server ({where['model_name']}), {REAL_TURNS} calls each, max_tokens {REAL_MAX_TOKENS}:"
    )
    for side in ("gateway", "OpenAI SDK"):
        plain, streamed = cost[side, False], cost[side, True]
        wall = sum(w for w, _ in streamed) / sum(w for w, _ in plain)
        cpu = sum(c for _, c in streamed) / sum(c for _, c in plain)
        print(
            f"  {side:<10} non-streamed {1000 * statistics.median(w for w, _ in plain):6.0f} ms wall, "
            f"{1000 * statistics.median(c for _, c in plain):5.1f} ms client CPU; streamed "
            f"{1000 * statistics.median(w for w, _ in streamed):6.0f} ms, "
            f"{1000 * statistics.median(c for _, c in streamed):5.1f} ms (medians); "
            f"streamed / non-streamed {wall:.2f}x wall, {cpu:.2f}x client CPU"
        )


def _line(label: str, rate: float) -> str:
    return f"{label:<42} {rate:8.1f} turns/s ({1000 / rate:6.2f} ms/turn)"


async def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    server = FakeLLMServer(models=["bench-model"]).start()
    server.responder = _responder
    # The gateway has no per-call endpoint yet: litellm's process-wide OpenAI settings point it here.
    os.environ["OPENAI_API_BASE"] = server.openai_base
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    rates: dict[tuple[str, bool], float] = {}
    try:
        for stream in (False, True):
            kind = "streamed" if stream else "non-streamed"
            # Interleaved and best of two, so neither side pays for the other's warm-up or a busy moment.
            bare = max([await bench_bare(server, stream=stream), await bench_bare(server, stream=stream)])
            first = await bench_loop(server, stream=stream)
            ours = None if first is None else max(first, await bench_loop(server, stream=stream) or 0.0)
            print(_line(f"bare litellm.acompletion, {kind}:", bare))
            rates["bare", stream] = bare
            if ours is None:
                print(f"AgentLoop, {kind}: n/a (the gateway does not stream agent calls)")
                continue
            print(_line(f"AgentLoop full turn, {kind}:", ours))
            print(f"cost ratio per turn, {kind} (ours / bare): {bare / ours:.2f}x  (aim <= 1.3x)")
            rates["ours", stream] = ours
        for side in ("ours", "bare"):
            if (side, True) in rates:
                label = "AgentLoop" if side == "ours" else "bare litellm"
                ratio = rates[side, False] / rates[side, True]
                aim = "  (aim <= 1.2x)" if side == "ours" else ""
                print(f"streamed / non-streamed per turn, {label}: {ratio:.2f}x{aim}")
    finally:
        server.stop()
    if "--no-real" not in sys.argv:
        await bench_real_server()


if __name__ == "__main__":
    asyncio.run(main())
