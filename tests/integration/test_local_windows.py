"""Local detection and windows the servers report (issue 28, item 9), against loopback fakes.

llama.cpp answers ``/props`` with the ``n_ctx`` it was started with, Ollama ``/api/show`` with the
model's context length, vLLM lists ``max_model_len``; a port the analyst names is asked too. The
validator then sizes its prompt by the window the server reported, not an assumed 32,000.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from core.config import load_settings
from core.domain.facts import WarningCode
from core.llm import LLMGateway
from core.llm.local import detect_local_servers
from core.profiles import ModelProfile, ModelRole
from core.tasks.service import TaskService
from core.validation.warnings import read_warnings
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, Reply

UNUSED_PORT = 9  # discard: nothing listens there on a test machine


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EVIDENCE_DESK_") or name.endswith("_API_BASE") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/config.toml")


@pytest.fixture
def servers() -> Iterator[list[HTTPServer]]:
    started = [HTTPServer(host="127.0.0.1") for _ in range(3)]
    for server in started:
        server.start()
    yield started
    for server in started:
        server.clear()
        if server.is_running():
            server.stop()


def _llamacpp(server: HTTPServer, n_ctx: int, model: str = "SmolLM2-135M-Instruct") -> None:
    server.expect_request("/v1/models").respond_with_json({"data": [{"id": model, "object": "model"}]})
    server.expect_request("/props").respond_with_json(
        {"default_generation_settings": {"n_ctx": n_ctx, "model": model}, "total_slots": 1}
    )


async def test_windows_come_from_props_api_show_and_model_lists(servers: list[HTTPServer]) -> None:
    llama, ollama, vllm = servers
    _llamacpp(llama, 8192)
    ollama.expect_request("/api/tags").respond_with_json({"models": [{"name": "qwen2.5:14b"}]})
    ollama.expect_request("/api/show", method="POST").respond_with_json(
        {"parameters": "", "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}
    )
    vllm.expect_request("/v1/models").respond_with_json(
        {"data": [{"id": "Qwen/Qwen2.5-7B-Instruct", "max_model_len": 16384}]}
    )
    ports = {"ollama": ollama.port, "lmstudio": UNUSED_PORT, "llamacpp": llama.port, "vllm": vllm.port}
    found = {s.kind: s for s in await detect_local_servers(ports=ports)}
    assert found["llamacpp"].context_window("openai/SmolLM2-135M-Instruct") == 8192
    assert found["ollama"].context_window("ollama_chat/qwen2.5:14b") == 32768
    assert found["vllm"].context_window("hosted_vllm/Qwen/Qwen2.5-7B-Instruct") == 16384


async def test_a_port_the_analyst_names_is_asked_too(servers: list[HTTPServer]) -> None:
    named = servers[0]
    _llamacpp(named, 4096)
    ports = {kind: UNUSED_PORT for kind in ("ollama", "lmstudio", "llamacpp", "vllm")}
    assert await detect_local_servers(ports=ports) == []
    (server,) = await detect_local_servers(ports=ports, extra_ports=[named.port, named.port])
    assert server.api_base == f"http://127.0.0.1:{named.port}/v1"
    assert server.models == ("openai/SmolLM2-135M-Instruct",)
    assert server.context_window("openai/SmolLM2-135M-Instruct") == 4096


def test_the_validator_sizes_its_prompt_by_the_served_window(
    fake_llm_factory: Callable[..., FakeLLMServer], tmp_path: Path
) -> None:
    server = fake_llm_factory(models=["smol"])
    server.server.expect_request("/props").respond_with_json({"default_generation_settings": {"n_ctx": 6000}})
    verdict = {"goal_achievement": "g", "completeness": "c", "rule_compliance": "r", "status": "rejected"}
    server.push(Reply.text("About 10,935 metres."), Reply.structured(verdict | {"score": 0.2}))
    profile = ModelProfile(api_base=server.openai_base, no_api_key=True)  # no context_window: ask the server
    settings = load_settings(
        db_url=f"sqlite+aiosqlite:///{tmp_path / 'ws.sqlite3'}",
        agent_model="openai/smol",
        validator_model="openai/smol-judge",
        max_validation_attempts=1,
        llm_num_retries=0,
        profiles={ModelRole.AGENT: profile, ModelRole.VALIDATOR: profile},
    )

    async def go() -> dict[str, object]:
        ws = await Workspace.open(settings, gateway=LLMGateway(settings, retry_backoff_s=0.0))
        try:
            service = TaskService(ws)
            task = await service.run((await service.create("How deep is the Challenger Deep?")).id)
            (validation,) = await ws.store.list_validations(task.id)
            return validation.debug
        finally:
            await ws.close()

    debug = asyncio.run(go())
    assert WarningCode.UNKNOWN_CONTEXT_WINDOW not in [w.code for w in read_warnings(debug)]
    assert debug["prompt_budget"] == int(6000 * 0.9) - 6000 // 4
    assert [request.path for request, _ in server.server.log].count("/props") == 1  # asked once
