"""A stream on the OpenAI protocol is read where the OpenAI SDK hands out its chunks (issue #28).

``core.llm.streaming`` reads ``openai/`` streams past litellm's stream wrapper, which cost a
streamed turn twice an unstreamed one. What the wrapper gave the product must not change: token
counts for a stream that carries none (llama-cpp-python's server ignores ``include_usage``) are
litellm's own estimate, and an answer that stalls mid-stream is a timeout, retried, as litellm's
mapping made it. Driven through the gateway over real HTTP to the loopback fake, with the endpoint
in a role profile as the README's llama.cpp section configures it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from core.config import load_settings
from core.llm import LLMError, LLMGateway, LLMTimeout
from core.llm.gateway import _import_litellm
from core.profiles import ModelProfile, ModelRole
from tests.fakes.llm_server import FakeLLMServer, Reply

MODEL = "openai/fake-local"
MESSAGES = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "How deep is the Mariana Trench, in metres?"},
]
TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look something up.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OPENAI_"):
            monkeypatch.delenv(name)


def _gateway(server: FakeLLMServer, **settings: Any) -> LLMGateway:
    profile = ModelProfile(model=MODEL, api_base=server.openai_base, no_api_key=True)
    config = load_settings(agent_model=MODEL, profiles={ModelRole.AGENT: profile}, **settings)
    return LLMGateway(config, retry_backoff_s=0.01)


async def _builder_usage(server: FakeLLMServer, tools: list[dict[str, Any]] | None) -> tuple[int, int]:
    """The counts litellm's own stream wrapper and ``stream_chunk_builder`` give the same stream."""
    litellm = _import_litellm()
    extra = {"tools": tools} if tools else {}
    stream = await litellm.acompletion(
        model=MODEL, messages=MESSAGES, api_base=server.openai_base, api_key="none", stream=True, **extra
    )
    chunks = [chunk async for chunk in stream]
    built = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    return built.usage.prompt_tokens, built.usage.completion_tokens


@pytest.mark.parametrize("kind", ["text", "tool_call"])
async def test_a_stream_without_usage_is_counted_as_litellms_builder_counts_it(
    fake_llm: FakeLLMServer, kind: str
) -> None:
    if kind == "text":
        reply = Reply.text("About 10,935 metres at the Challenger Deep.")
    else:
        reply = Reply.tools(("lookup", {"query": "Mariana Trench depth"}))
    reply.stream_usage = False
    fake_llm.push(reply, reply)
    tools = [TOOL] if kind == "tool_call" else None
    expected = await _builder_usage(fake_llm, tools)

    response = await _gateway(fake_llm).complete(
        model=MODEL, role=ModelRole.AGENT, messages=MESSAGES, tools=tools, stream=True
    )

    assert [r.stream for r in fake_llm.chat_requests()] == [True, True]
    assert expected[0] > 0 and expected[1] > 0
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == expected
    if kind == "text":
        assert response.content == "About 10,935 metres at the Challenger Deep."
        assert response.finish_reason == "stop"
    else:
        assert [c.name for c in response.tool_calls] == ["lookup"]
        assert json.loads(response.tool_calls[0].arguments) == {"query": "Mariana Trench depth"}


async def test_a_stream_that_stalls_mid_answer_is_a_timeout_and_is_retried(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Reply.cut_stream("About 10,", how="stall"), Reply.cut_stream("About 10,", how="stall"))
    deltas: list[str] = []

    with pytest.raises(LLMTimeout) as caught:
        await _gateway(fake_llm, llm_num_retries=1).complete(
            model=MODEL,
            role=ModelRole.AGENT,
            messages=MESSAGES,
            stream=True,
            on_delta=deltas.append,
            timeout_s=1.0,  # the server stalls until it stops: only the read timeout ends the wait
        )

    assert caught.value.kind == "timeout" and caught.value.transient
    assert len(fake_llm.chat_requests()) == 2  # the stalled try and its one retry
    assert "".join(deltas).startswith("About 10,")


async def test_a_failing_delta_sink_is_not_taken_for_a_stream_failure(fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Reply.text("About 10,935 metres."), Reply.text("About 10,935 metres."))

    def sink(piece: str) -> None:
        raise ValueError("the watcher broke")

    with pytest.raises(LLMError) as caught:
        await _gateway(fake_llm, llm_num_retries=1).complete(
            model=MODEL, role=ModelRole.AGENT, messages=MESSAGES, stream=True, on_delta=sink
        )

    # Our own fault, not the provider's: never mapped to a connection error and retried.
    assert caught.value.kind == "unexpected" and not caught.value.transient
    assert "the watcher broke" in str(caught.value)
    assert len(fake_llm.chat_requests()) == 1
