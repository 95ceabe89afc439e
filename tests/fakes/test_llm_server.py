"""The fake server speaks both dialects well enough for litellm's real parsers, streaming included."""

from __future__ import annotations

import json
from typing import Any

import httpx

from core.llm.gateway import warm_up_litellm
from tests.fakes.llm_server import FakeLLMServer, Reply

MESSAGES = [{"role": "user", "content": "How deep is the Mariana Trench?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_corpus",
            "description": "search",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]


def _litellm() -> Any:
    warm_up_litellm()
    import litellm

    return litellm


async def test_openai_stream_with_tool_call_deltas_assembles(fake_llm: FakeLLMServer) -> None:
    litellm = _litellm()
    fake_llm.push(Reply.tools(("search_corpus", {"query": "Challenger Deep"})))
    stream = await litellm.acompletion(
        model="openai/fake-model",
        messages=MESSAGES,
        tools=TOOLS,
        stream=True,
        api_base=fake_llm.openai_base,
        api_key="sk-test",
    )
    chunks = [chunk async for chunk in stream]
    assert len(chunks) > 3  # arguments arrive in more than one delta
    built = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    call = built.choices[0].message.tool_calls[0]
    assert call.function.name == "search_corpus"
    assert json.loads(call.function.arguments) == {"query": "Challenger Deep"}
    assert built.choices[0].finish_reason == "tool_calls"
    (request,) = fake_llm.chat_requests()
    assert request.stream and request.headers["authorization"] == "Bearer sk-test"


async def test_ollama_chat_tool_call_and_text(fake_llm: FakeLLMServer) -> None:
    litellm = _litellm()
    fake_llm.push(Reply.tools(("search_corpus", {"query": "depth"})), Reply.text("About 10,935 metres."))
    first = await litellm.acompletion(
        model="ollama_chat/fake-model", messages=MESSAGES, tools=TOOLS, api_base=fake_llm.url
    )
    assert first.choices[0].message.tool_calls[0].function.name == "search_corpus"
    second = await litellm.acompletion(
        model="ollama_chat/fake-model", messages=MESSAGES, api_base=fake_llm.url
    )
    assert second.choices[0].message.content == "About 10,935 metres."
    assert second.usage.prompt_tokens == 11
    assert [r.path for r in fake_llm.chat_requests()] == ["/api/chat", "/api/chat"]


async def test_model_listing_endpoints(fake_llm_factory: Any) -> None:
    server = fake_llm_factory(models=["llama3.1:8b", "qwen2.5:7b"], context_length=32768)
    async with httpx.AsyncClient(base_url=server.url) as client:
        tags = (await client.get("/api/tags")).json()
        show = (await client.post("/api/show", json={"model": "llama3.1:8b"})).json()
        models = (await client.get("/v1/models")).json()
    assert [m["name"] for m in tags["models"]] == ["llama3.1:8b", "qwen2.5:7b"]
    assert show["model_info"]["llama.context_length"] == 32768
    assert [m["id"] for m in models["data"]] == ["llama3.1:8b", "qwen2.5:7b"]
    assert [r.path for r in server.requests] == ["/api/tags", "/api/show", "/v1/models"]


async def test_an_exhausted_queue_is_a_loud_server_error(fake_llm: FakeLLMServer) -> None:
    async with httpx.AsyncClient(base_url=fake_llm.openai_base) as client:
        response = await client.post("/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert response.status_code == 500 and "no scripted reply" in response.text
