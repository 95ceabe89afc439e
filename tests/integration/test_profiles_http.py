"""Role profiles over real HTTP: each role's endpoint, key and tuning travel per call through litellm.

Two loopback servers (pytest-httpserver) answer at once: the agent's and the validator's. Nothing in
the project is mocked; the calls take litellm's real OpenAI and Ollama paths.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from core.config import load_settings
from core.domain import TaskStatus
from core.errors import ConfigurationError
from core.profiles import ModelProfile, ModelRole
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.integration.conftest import verdict

ANSWER = "Tides are caused mainly by the Moon's gravity."


def _chat_answer(content: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }


def openai_server(server: HTTPServer, content: str) -> list[dict[str, Any]]:
    """Serve ``/v1/chat/completions`` with ``content``; returns the list each request body lands in."""
    seen: list[dict[str, Any]] = []

    def handle(request: Request) -> Response:
        body = json.loads(request.get_data())
        body["_authorization"] = request.headers.get("Authorization")
        seen.append(body)
        return Response(json.dumps(_chat_answer(content, body["model"])), content_type="application/json")

    server.expect_request("/v1/chat/completions", method="POST").respond_with_handler(handle)
    return seen


def ollama_server(server: HTTPServer, content: str) -> dict[str, list[dict[str, Any]]]:
    """Serve Ollama's ``/api/tags``, ``/api/show`` and ``/api/chat``; returns requests per path."""
    seen: dict[str, list[dict[str, Any]]] = {"/api/chat": [], "/api/show": []}

    def chat(request: Request) -> Response:
        body = json.loads(request.get_data())
        seen["/api/chat"].append(body)
        answer = {
            "model": body["model"],
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": content},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 12,
            "eval_count": 5,
        }
        return Response(json.dumps(answer), content_type="application/json")

    def show(request: Request) -> Response:
        seen["/api/show"].append(json.loads(request.get_data()))
        info = {"template": "{{ .Prompt }}", "model_info": {"llama.context_length": 8192}}
        return Response(json.dumps(info), content_type="application/json")

    server.expect_request("/api/chat", method="POST").respond_with_handler(chat)
    server.expect_request("/api/show", method="POST").respond_with_handler(show)
    server.expect_request("/api/tags").respond_with_json({"models": [{"name": "tiny:1b"}]})
    return seen


@pytest.fixture
def second_server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1")
    server.start()
    yield server
    server.clear()
    if server.is_running():
        server.stop()


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EVIDENCE_DESK_") or name.endswith("_API_BASE") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/config.toml")


async def _run_task(settings: Any) -> tuple[Any, Workspace]:
    ws = await Workspace.open(settings)
    service = TaskService(ws)
    task = await service.create("What causes tides?")
    return await service.run(task.id), ws


async def test_agent_and_validator_use_their_own_servers_with_their_own_tuning(
    httpserver: HTTPServer, second_server: HTTPServer, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_seen = openai_server(httpserver, ANSWER)
    validator_seen = openai_server(second_server, verdict("accepted", 0.9))
    monkeypatch.setenv("VALIDATOR_KEY", "validator-secret-123")
    settings = load_settings(
        db_url=sqlite_url,
        agent_model="openai/agent-local",
        validator_model="openai/judge-local",
        max_validation_attempts=1,
        profiles={
            ModelRole.AGENT: ModelProfile(
                api_base=httpserver.url_for("/v1"), no_api_key=True, temperature=0.2, max_tokens=300
            ),
            ModelRole.VALIDATOR: ModelProfile(
                api_base=second_server.url_for("/v1"),
                api_key_env="VALIDATOR_KEY",
                temperature=0.0,
                max_tokens=700,
                context_window=16_000,
                extra={"seed": 7},
            ),
        },
    )
    task, ws = await _run_task(settings)
    await ws.close()

    assert task.status is TaskStatus.AWAITING_FEEDBACK
    assert agent_seen and validator_seen
    assert {r["model"] for r in agent_seen} == {"agent-local"}
    assert {r["model"] for r in validator_seen} == {"judge-local"}
    assert all(r["temperature"] == 0.2 and r["max_tokens"] == 300 for r in agent_seen)
    assert all(r["temperature"] == 0.0 and r["max_tokens"] == 700 and r["seed"] == 7 for r in validator_seen)
    # The keyless agent server never sees a credential; the validator's key reaches only its server.
    assert all(r["_authorization"] in (None, "Bearer no-key") for r in agent_seen)
    assert all(r["_authorization"] == "Bearer validator-secret-123" for r in validator_seen)
    # litellm accepts response_format for an OpenAI-compatible model it does not know: the verdict schema goes along.
    assert validator_seen[0]["response_format"]["type"] == "json_schema"
    assert "response_format" not in agent_seen[0]


async def test_ollama_agent_gets_num_ctx_from_the_prompt_and_show_is_asked_once(
    httpserver: HTTPServer, second_server: HTTPServer, sqlite_url: str
) -> None:
    seen = ollama_server(httpserver, ANSWER)
    openai_server(second_server, verdict("accepted", 0.9))
    settings = load_settings(
        db_url=sqlite_url,
        agent_model="ollama_chat/tiny:1b",
        validator_model="openai/judge-local",
        max_validation_attempts=1,
        api_base=httpserver.url_for(""),  # the top-level default endpoint
        profiles={
            ModelRole.AGENT: ModelProfile(max_tokens=512),
            ModelRole.VALIDATOR: ModelProfile(api_base=second_server.url_for("/v1"), no_api_key=True),
        },
    )
    task, ws = await _run_task(settings)
    await ws.close()

    assert task.status is TaskStatus.AWAITING_FEEDBACK
    chats = seen["/api/chat"]
    assert chats
    options = chats[0]["options"]
    assert options["num_ctx"] >= 2048 and options["num_ctx"] % 2048 == 0
    assert options["num_predict"] == 512
    assert len(seen["/api/show"]) == 1  # cached per model, never once per lookup


async def test_missing_key_is_refused_before_anything_is_written_or_sent(
    httpserver: HTTPServer, sqlite_url: str
) -> None:
    seen = openai_server(httpserver, ANSWER)
    settings = load_settings(
        db_url=sqlite_url,
        agent_model="openai/agent-local",
        validator_model="openai/agent-local",
        profiles={
            ModelRole.AGENT: ModelProfile(api_base=httpserver.url_for("/v1"), api_key_env="ABSENT_KEY")
        },
    )
    ws = await Workspace.open(settings)
    try:
        with pytest.raises(ConfigurationError, match=r"profiles\.agent\.api_key_env names ABSENT_KEY"):
            await TaskService(ws).create("What causes tides?")
        assert await ws.store.list_tasks() == []
    finally:
        await ws.close()
    assert seen == []


async def test_no_key_anywhere_names_the_settings_to_fix(httpserver: HTTPServer, sqlite_url: str) -> None:
    seen = openai_server(httpserver, ANSWER)
    settings = load_settings(
        db_url=sqlite_url,
        agent_model="openai/agent-local",
        validator_model="openai/agent-local",
        api_base=httpserver.url_for("/v1"),
    )
    ws = await Workspace.open(settings)
    try:
        with pytest.raises(ConfigurationError, match=r"OPENAI_API_KEY.*profiles\.agent\.no_api_key = true"):
            await TaskService(ws).create("What causes tides?")
        assert await ws.store.list_tasks() == []
    finally:
        await ws.close()
    assert seen == []


async def test_a_server_that_refuses_response_format_gets_the_prompt_only_contract(
    httpserver: HTTPServer, second_server: HTTPServer, sqlite_url: str
) -> None:
    openai_server(httpserver, ANSWER)
    seen: list[dict[str, Any]] = []

    def judge(request: Request) -> Response:
        body = json.loads(request.get_data())
        seen.append(body)
        if "response_format" in body:
            error = {
                "error": {"message": "response_format is not supported", "type": "invalid_request_error"}
            }
            return Response(json.dumps(error), status=400, content_type="application/json")
        answer = _chat_answer(verdict("accepted", 0.9), body["model"])
        return Response(json.dumps(answer), content_type="application/json")

    second_server.expect_request("/v1/chat/completions", method="POST").respond_with_handler(judge)
    settings = load_settings(
        db_url=sqlite_url,
        agent_model="openai/agent-local",
        validator_model="openai/judge-local",
        max_validation_attempts=1,
        profiles={
            ModelRole.AGENT: ModelProfile(api_base=httpserver.url_for("/v1"), no_api_key=True),
            ModelRole.VALIDATOR: ModelProfile(api_base=second_server.url_for("/v1"), no_api_key=True),
        },
    )
    task, ws = await _run_task(settings)
    await ws.close()
    assert task.status is TaskStatus.AWAITING_FEEDBACK
    # json_schema refused, then JSON mode refused, then the schema in the prompt alone (core.llm.contract).
    assert ["response_format" in r for r in seen] == [True, True, False]


def test_profiles_from_toml_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'api_base = "http://127.0.0.1:9"\n'
        "[profiles.validator]\n"
        'model = "openai/judge"\n'
        "temperature = 0.1\n"
        "no_api_key = true\n"
        "[profiles.validator.extra]\n"
        "num_ctx = 8192\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(config))
    monkeypatch.setenv("EVIDENCE_DESK_PROFILES__AGENT__API_BASE", "http://127.0.0.1:7/v1")
    monkeypatch.setenv("EVIDENCE_DESK_PROFILES__AGENT__MAX_TOKENS", "256")
    settings = load_settings()
    agent = settings.profile(ModelRole.AGENT)
    validator = settings.profile(ModelRole.VALIDATOR)
    planner = settings.profile(ModelRole.PLANNER)
    assert agent is not None and validator is not None and planner is not None
    assert (agent.api_base, agent.max_tokens, agent.model) == ("http://127.0.0.1:7/v1", 256, "scripted/agent")
    assert validator.model == "openai/judge" and validator.temperature == 0.1
    assert validator.call_kwargs() == {
        "num_ctx": 8192,
        "api_base": "http://127.0.0.1:9",
        "api_key": "no-key",
        "temperature": 0.1,
    }
    assert planner.api_base == "http://127.0.0.1:9"  # the top-level default
    assert settings.profile(ModelRole.VALIDATOR_FALLBACK) is None  # no fallback model set

    monkeypatch.setenv("EVIDENCE_DESK_API_BASE", "http://127.0.0.1:8")
    assert load_settings().api_base == "http://127.0.0.1:8"  # the environment wins over the file


def test_a_bad_profile_names_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIDENCE_DESK_PROFILES__CRITIC__MODEL", "x")
    with pytest.raises(ConfigurationError, match=r"profiles\.critic"):
        load_settings()


def test_keyring_key_source(monkeypatch: pytest.MonkeyPatch) -> None:
    from core.profiles import resolve_profile

    settings = load_settings(profiles={ModelRole.AGENT: ModelProfile(api_key_keyring="work-key")})
    found = resolve_profile(settings, ModelRole.AGENT, keyring_lookup=lambda s, n: "k-123456789")
    assert found is not None and found.call_kwargs()["api_key"] == "k-123456789"
    with pytest.raises(ConfigurationError, match=r"profiles\.agent\.api_key_keyring names 'work-key'"):
        resolve_profile(settings, ModelRole.AGENT, keyring_lookup=lambda s, n: None)


def test_a_profile_context_window_replaces_the_assumed_window() -> None:
    from core.llm.gateway import LLMGateway

    settings = load_settings(
        validator_model="openai/judge-unknown",
        profiles={ModelRole.VALIDATOR: ModelProfile(context_window=16_000, no_api_key=True)},
    )
    assert LLMGateway(settings).context_window("openai/judge-unknown") == 16_000
    bare = load_settings(validator_model="openai/judge-unknown")
    assert (
        LLMGateway(bare).context_window("openai/judge-unknown") is None
    )  # the validator then assumes 32,000
