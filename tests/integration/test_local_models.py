"""Local model servers on loopback: detection, Ollama's num_ctx, and /api/show asked once, off the loop."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from core.config import load_settings
from core.llm.gateway import LLMGateway
from core.llm.local import detect_local_servers, ollama_num_ctx
from core.profiles import ModelProfile, ModelRole

UNUSED_PORT = 9  # discard: nothing listens there on a test machine


@pytest.fixture
def second_server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1")
    server.start()
    yield server
    server.clear()
    if server.is_running():
        server.stop()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/config.toml")
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)


async def test_detects_ollama_and_openai_compatible_servers(
    httpserver: HTTPServer, second_server: HTTPServer
) -> None:
    httpserver.expect_request("/api/tags").respond_with_json(
        {"models": [{"name": "llama3.2:1b"}, {"name": "qwen2.5:7b"}]}
    )
    second_server.expect_request("/v1/models").respond_with_json({"data": [{"id": "local-model"}]})
    ports = {
        "ollama": httpserver.port,
        "lmstudio": second_server.port,
        "llamacpp": UNUSED_PORT,
        "vllm": UNUSED_PORT,
    }
    servers = await detect_local_servers(ports=ports)
    by_kind = {s.kind: s for s in servers}
    assert set(by_kind) == {"ollama", "lmstudio"}
    assert by_kind["ollama"].models == ("ollama_chat/llama3.2:1b", "ollama_chat/qwen2.5:7b")
    assert by_kind["ollama"].api_base == f"http://127.0.0.1:{httpserver.port}"
    assert by_kind["lmstudio"].models == ("openai/local-model",)
    assert by_kind["lmstudio"].api_base.endswith("/v1")


async def test_nothing_running_finds_nothing_quickly() -> None:
    ports = {kind: UNUSED_PORT for kind in ("ollama", "lmstudio", "llamacpp", "vllm")}
    assert await detect_local_servers(ports=ports, timeout_s=0.5) == []


def test_num_ctx_holds_the_prompt_and_the_answer() -> None:
    assert ollama_num_ctx(0, None) == 2048
    long_prompt = 60_000 * 3  # ~60k tokens of validator prompt
    size = ollama_num_ctx(long_prompt, 1000)
    assert size >= 61_000 and size % 2048 == 0


async def test_ollama_metadata_is_fetched_once_in_a_worker_and_num_ctx_follows_the_prompt(
    httpserver: HTTPServer,
) -> None:
    shows: list[dict[str, Any]] = []
    chats: list[dict[str, Any]] = []
    arrived, release = threading.Event(), threading.Event()
    released_in_time: list[bool] = []

    def show(request: Request) -> Response:
        shows.append(json.loads(request.get_data()))
        # Held until the event loop answers: if /api/show ran on the loop's thread, the loop could not.
        arrived.set()
        released_in_time.append(release.wait(20))
        info = {"template": "{{ .Prompt }} tools", "model_info": {"llama.context_length": 131072}}
        return Response(json.dumps(info), content_type="application/json")

    def chat(request: Request) -> Response:
        body = json.loads(request.get_data())
        chats.append(body)
        answer = {
            "model": body["model"],
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "ok"},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 3,
            "eval_count": 1,
        }
        return Response(json.dumps(answer), content_type="application/json")

    httpserver.expect_request("/api/show", method="POST").respond_with_handler(show)
    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(chat)
    model = "ollama_chat/once-only:3b"
    settings = load_settings(
        validator_model=model,
        profiles={
            ModelRole.VALIDATOR: ModelProfile(api_base=httpserver.url_for("").rstrip("/"), max_tokens=100)
        },
    )
    gateway = LLMGateway(settings)

    preparing = asyncio.create_task(gateway.prepare(model))
    assert await asyncio.to_thread(arrived.wait, 20)
    release.set()  # the loop ran this line while /api/show was in flight: it was never blocked
    await preparing
    assert gateway.context_window(model) == 131072  # from the cache: no request on this thread
    assert gateway.supports_response_format(model)
    long_text = "tide " * 20_000
    await gateway.complete(model=model, messages=[{"role": "user", "content": long_text}])
    await asyncio.gather(
        *(gateway.complete(model=model, messages=[{"role": "user", "content": "hi"}]) for _ in range(3))
    )
    assert len(shows) == 1  # once per model, whatever litellm looks up afterwards
    assert released_in_time == [True]
    assert chats[0]["options"]["num_ctx"] >= len(long_text) // 3 + 100
    assert chats[0]["options"]["num_predict"] == 100
    assert chats[1]["options"]["num_ctx"] == 2048
