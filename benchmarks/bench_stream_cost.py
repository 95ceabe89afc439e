"""Client CPU of one streamed call against one unstreamed call, per client layer, in one run.

The loopback fake OpenAI-compatible server (tests/fakes/llm_server.py, answering at once) runs in
a process of its own, so the figures are the client's CPU time alone (``time.process_time``), not
the server's nor the wall clock of a shared machine. Each layer makes the same request (a
transcript of five tool rounds, the bench tool offered; the answer is one tool call, six chunks
with the usage chunk) streamed and unstreamed:

- raw httpx: SSE lines read and parsed with ``json.loads`` against one JSON body (the floor of
  any Python client);
- the OpenAI SDK that litellm uses: its typed chunks against its typed reply;
- litellm's stream wrapper (``CustomStreamWrapper``) and ``stream_chunk_builder``, as
  bench_provider_http's bare side reads a stream (the product read every stream through this
  wrapper before; providers other than ``openai/`` still do);
- the gateway's streaming (``core.llm.streaming.stream_completion``), against
  ``litellm.acompletion`` unstreamed.

Rounds are interleaved; min / median / max of the rounds are printed. Aim: the gateway's streamed
call at most 1.2x its unstreamed one.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_provider_http import noop
from core.llm.gateway import _import_litellm
from core.llm.streaming import stream_completion
from core.tools.registry import ToolRegistry

ROUNDS = 5
CALLS = 60
SERVER = """
import logging, sys
from benchmarks.bench_provider_http import _responder
from tests.fakes.llm_server import FakeLLMServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = FakeLLMServer(models=["bench-model"]).start()
server.responder = _responder
print(server.openai_base, flush=True)
sys.stdin.read()  # until the bench closes our stdin
server.stop()
"""

Call = Callable[[], Awaitable[None]]


def _request() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    schemas = ToolRegistry()
    schemas.register(noop)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(5):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "noop", "arguments": '{"query": "q"}'},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "name": "noop", "content": "q"})
    return messages, schemas.schemas()


def _layers(base: str, chunk_counts: list[int]) -> dict[str, tuple[Call, Call]]:
    """Each layer's (unstreamed, streamed) call; each checks it got the tool call."""
    import httpx
    import openai

    litellm = _import_litellm()
    messages, tools = _request()
    body = {"model": "bench-model", "messages": messages, "tools": tools}
    client = httpx.AsyncClient(base_url=base)
    sdk = openai.AsyncOpenAI(base_url=base, api_key="sk-bench")
    kwargs = {
        "model": "openai/bench-model",
        "messages": messages,
        "tools": tools,
        "api_base": base,
        "api_key": "sk-bench",
    }
    usage = {"include_usage": True}

    async def httpx_plain() -> None:
        reply = (await client.post("/chat/completions", json=body)).json()
        assert reply["choices"][0]["message"]["tool_calls"]

    async def httpx_stream() -> None:
        calls = 0
        async with client.stream(
            "POST", "/chat/completions", json={**body, "stream": True, "stream_options": usage}
        ) as r:
            async for line in r.aiter_lines():
                if line.startswith("data: ") and not line.startswith("data: [DONE]"):
                    for choice in json.loads(line[6:]).get("choices") or []:
                        calls += len((choice.get("delta") or {}).get("tool_calls") or [])
        assert calls

    async def sdk_plain() -> None:
        reply = await sdk.chat.completions.create(model="bench-model", messages=messages, tools=tools)  # type: ignore[arg-type]
        assert reply.choices[0].message.tool_calls

    async def sdk_stream() -> None:
        stream = await sdk.chat.completions.create(
            model="bench-model",
            messages=messages,
            tools=tools,
            stream=True,
            stream_options=usage,  # type: ignore[arg-type]
        )
        chunks = [chunk async for chunk in stream]
        chunk_counts.append(len(chunks))
        assert any(c.choices and c.choices[0].delta.tool_calls for c in chunks)

    async def litellm_plain() -> None:
        reply = await litellm.acompletion(**kwargs)
        assert reply.choices[0].message.tool_calls

    async def wrapper_stream() -> None:
        stream = await litellm.acompletion(**kwargs, stream=True, stream_options=usage)
        built = litellm.stream_chunk_builder([chunk async for chunk in stream], messages=messages)
        assert built.choices[0].message.tool_calls

    async def gateway_stream() -> None:
        reply = await stream_completion(litellm, dict(kwargs), None)
        assert reply.choices[0].message.tool_calls and reply.choices[0].finish_reason == "tool_calls"

    return {
        "raw httpx (SSE lines vs one JSON body)": (httpx_plain, httpx_stream),
        "OpenAI SDK": (sdk_plain, sdk_stream),
        "litellm stream wrapper + chunk builder": (litellm_plain, wrapper_stream),
        "gateway stream_completion": (litellm_plain, gateway_stream),
    }


async def _cpu_per_call(call: Call) -> float:
    started = time.process_time()
    for _ in range(CALLS):
        await call()
    return (time.process_time() - started) / CALLS * 1e6


async def measure(base: str) -> None:
    chunk_counts: list[int] = []
    layers = _layers(base, chunk_counts)
    for plain, streamed in layers.values():  # warm-up: imports, connections, provider lookups
        for _ in range(10):
            await plain()
            await streamed()
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in layers}
    for _ in range(ROUNDS):
        for name, (plain, streamed) in layers.items():
            figures[name].append((await _cpu_per_call(plain), await _cpu_per_call(streamed)))
    chunks = statistics.median(chunk_counts)
    print(f"client CPU per call, {ROUNDS} rounds of {CALLS} calls; a streamed answer is {chunks:g} chunks")
    for name, pairs in figures.items():
        ratios = sorted(s / p for p, s in pairs)
        plain_us = statistics.median(p for p, _ in pairs)
        stream_us = statistics.median(s for _, s in pairs)
        print(
            f"{name:<40} unstreamed {plain_us:7.0f} us, streamed {stream_us:7.0f} us "
            f"({(stream_us - plain_us) / chunks:5.0f} us/chunk more); streamed/unstreamed "
            f"min/median/max {ratios[0]:.2f}/{ratios[len(ratios) // 2]:.2f}/{ratios[-1]:.2f}x"
        )
    print("aim: gateway stream_completion at most 1.2x")


def main() -> None:
    root = str(Path(__file__).resolve().parent.parent)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=root
    )
    try:
        assert server.stdout is not None
        asyncio.run(measure(server.stdout.readline().strip()))
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
