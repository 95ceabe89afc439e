"""LLMGateway over the scripted provider: typed errors, observable retries, timeouts, cancellation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from core.config import Settings
from core.errors import ConfigurationError
from core.llm import (
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMGateway,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    ScriptError,
    UsageRecord,
    before_sending,
    provider_family,
    reset_scripted_stats,
    scripted_stats,
)
from core.llm.gateway import redact
from tests.gates import wait_until

BASIC = Path(__file__).parent / "scripts" / "basic.json"


@pytest.fixture(autouse=True)
def _fresh_stats() -> None:
    reset_scripted_stats()


def gateway(script: Path | None = BASIC, **kwargs: Any) -> LLMGateway:
    return LLMGateway(Settings(script=script), retry_backoff_s=0.001, **kwargs)


def one_turn_script(tmp_path: Path, turn: dict[str, Any], model: str = "m") -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"conversations": [{"model": model, "turns": [turn]}]}), encoding="utf-8")
    return path


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def test_complete_returns_content_usage_and_provider() -> None:
    records: list[UsageRecord] = []
    gw = gateway(on_usage=records.append)
    messages = [*user("tides"), {"role": "assistant", "content": None}]
    resp = await gw.complete(model="scripted/agent", messages=messages)
    assert resp.content == "Tides come from the moon [E1]."
    assert resp.tool_calls == []
    assert resp.finish_reason == "stop"
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens, resp.usage.total_tokens) == (120, 9, 129)
    assert (resp.model, resp.provider) == ("scripted/agent", "scripted")
    assert resp.latency_s >= 0
    assert records == list(gw.usage)
    assert [(r.ok, r.attempt, r.prompt_tokens, r.completion_tokens) for r in gw.usage] == [(True, 1, 120, 9)]


async def test_the_gateway_keeps_its_latest_calls_records_and_listeners_see_every_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace's one gateway lives as long as the desk or a worker: its memory must not grow
    with every call it ever made (each call's usage is stored in the events, where totals come from)."""
    import core.llm.gateway as gateway_module

    monkeypatch.setattr(gateway_module, "USAGE_KEPT", 3)
    records: list[UsageRecord] = []
    gw = gateway(one_turn_script(tmp_path, {"content": "ok"}), on_usage=records.append)
    for _ in range(5):
        await gw.complete(model="scripted/m", messages=user("q"))
    assert len(records) == 5
    assert list(gw.usage) == records[-3:]


async def test_tool_calls_and_request_parameters_pass_through() -> None:
    class Verdict(BaseModel):
        status: str

    tools = [{"type": "function", "function": {"name": "search_corpus", "parameters": {"type": "object"}}}]
    resp = await gateway().complete(
        model="scripted/agent",
        messages=user("tides"),
        tools=tools,
        tool_choice="required",
        response_format=Verdict,
        max_tokens=50,
        temperature=0.0,
    )
    assert [(c.id, c.name) for c in resp.tool_calls] == [
        ("call_0_0", "search_corpus"),
        ("call_0_1", "read_document"),
    ]
    assert json.loads(resp.tool_calls[0].arguments) == {"query": "tides"}
    assert resp.finish_reason == "tool_calls"
    (req,) = scripted_stats().requests
    assert (req.tool_names, req.tool_choice, req.response_format) == (("search_corpus",), "required", True)


@pytest.mark.parametrize(
    ("kind", "error_type", "transient"),
    [
        ("timeout", LLMTimeout, True),
        ("rate_limit", LLMRateLimited, True),
        ("server_error", LLMServerError, True),
        ("connection", LLMConnectionError, True),
        ("bad_request", LLMBadRequest, False),
    ],
)
async def test_each_error_kind_maps_to_its_typed_error(
    tmp_path: Path, kind: str, error_type: type[LLMError], transient: bool
) -> None:
    gw = gateway(one_turn_script(tmp_path, {"error": kind}))
    with pytest.raises(error_type) as info:
        await gw.complete(model="scripted/m", messages=user("q"), num_retries=0)
    err = info.value
    assert type(err) is error_type
    assert (err.kind, err.transient, err.model) == (kind, transient, "scripted/m")
    assert str(err).startswith("scripted/m: ")
    assert "\n" not in str(err)
    assert [(r.ok, r.error_kind) for r in gw.usage] == [(False, kind)]


async def test_before_sending_runs_before_each_request_of_its_block_only(tmp_path: Path) -> None:
    # The shadow replay ends a verdict's turn there: it must run before the provider sees the
    # request (each try, a retry included), and never for a call outside the block.
    gw = gateway(one_turn_script(tmp_path, {"error": "timeout", "fail_times": 1, "content": "ok"}))
    seen: list[int] = []
    with before_sending(lambda: seen.append(len(scripted_stats().requests))):
        await gw.complete(model="scripted/m", messages=user("q"))
    assert seen == [0, 1]
    await gw.complete(model="scripted/m", messages=user("q"))
    assert seen == [0, 1]


async def test_fail_times_one_is_recovered_by_the_gateway_retry(tmp_path: Path) -> None:
    records: list[UsageRecord] = []
    gw = gateway(
        one_turn_script(tmp_path, {"error": "timeout", "fail_times": 1, "content": "after one timeout"}),
        on_usage=records.append,
    )
    resp = await gw.complete(model="scripted/m", messages=user("q"))
    assert resp.content == "after one timeout"
    assert [(r.ok, r.error_kind, r.attempt) for r in gw.usage] == [(False, "timeout", 1), (True, None, 2)]
    assert records == list(gw.usage)


async def test_transient_errors_are_retried_until_the_budget_runs_out(tmp_path: Path) -> None:
    gw = gateway(one_turn_script(tmp_path, {"error": "server_error"}))
    with pytest.raises(LLMServerError, match="after 3 attempts"):
        await gw.complete(model="scripted/m", messages=user("q"), num_retries=2)
    assert [r.attempt for r in gw.usage] == [1, 2, 3]
    assert not any(r.ok for r in gw.usage)
    settings_budget = LLMGateway(
        Settings(script=gw.settings.script, llm_num_retries=1), retry_backoff_s=0.001
    )
    with pytest.raises(LLMServerError):
        await settings_budget.complete(model="scripted/m", messages=user("q"))
    assert len(settings_budget.usage) == 2


async def test_bad_request_is_not_retried(tmp_path: Path) -> None:
    gw = gateway(one_turn_script(tmp_path, {"error": "bad_request"}))
    with pytest.raises(LLMBadRequest):
        await gw.complete(model="scripted/m", messages=user("q"), num_retries=3)
    assert len(gw.usage) == 1


async def test_exhausted_script_is_a_clear_unretried_script_error() -> None:
    gw = gateway()
    messages = [*user("capital of France"), {"role": "assistant", "content": "Paris"}]
    with pytest.raises(ScriptError) as info:
        await gw.complete(model="scripted/agent", messages=messages, num_retries=3)
    text = str(info.value)
    assert "scripted/agent" in text and "no turn 1" in text and "basic.json" in text
    assert not info.value.transient
    assert [(r.ok, r.error_kind) for r in gw.usage] == [(False, "script")]


async def test_unknown_scripted_model_names_model_and_turn() -> None:
    with pytest.raises(ScriptError, match=r"scripted/planner at turn 0: no conversation has this model"):
        await gateway().complete(model="scripted/planner", messages=user("plan"))


async def test_scripted_model_without_script_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="scripted/agent needs a script"):
        await gateway(script=None).complete(model="scripted/agent", messages=user("q"))


async def test_broken_script_is_reported_before_any_call(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"conversations": []}', encoding="utf-8")
    gw = gateway(path)
    with pytest.raises(ConfigurationError, match=r"bad\.json: conversations: List should have at least 1"):
        await gw.complete(model="scripted/m", messages=user("q"))
    assert not gw.usage


async def test_timeout_s_is_enforced_by_the_gateway(tmp_path: Path) -> None:
    gw = gateway(one_turn_script(tmp_path, {"content": "too late", "delay_s": 3600}))
    with pytest.raises(LLMTimeout, match=r"scripted/m: no answer within 0.05 s"):
        await gw.complete(model="scripted/m", messages=user("q"), timeout_s=0.05, num_retries=0)
    assert [(r.ok, r.error_kind) for r in gw.usage] == [(False, "timeout")]
    assert scripted_stats().in_flight == 0


async def test_cancellation_propagates_and_is_never_retried(tmp_path: Path) -> None:
    gw = gateway(one_turn_script(tmp_path, {"content": "slow", "delay_s": 3600}))
    task = asyncio.create_task(gw.complete(model="scripted/m", messages=user("q"), num_retries=5))
    await wait_until(lambda: scripted_stats().in_flight > 0, what="the call to sit inside the delay")
    assert scripted_stats().in_flight == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not gw.usage
    assert len(scripted_stats().requests) == 1
    assert scripted_stats().in_flight == 0


def test_model_metadata_helpers() -> None:
    gw = gateway()
    assert provider_family("scripted/agent") == "scripted"
    assert provider_family("gpt-4o") == "openai"
    assert provider_family("claude-3-5-sonnet-20240620") == "anthropic"
    assert provider_family("anthropic/claude-3-5-sonnet-20240620") == "anthropic"
    assert gw.context_window("gpt-4o") == 128000
    assert gw.context_window("no-such-model-xyz") is None
    assert gw.context_window("scripted/agent") is None
    assert gw.supports_response_format("scripted/agent") is True
    assert gw.supports_response_format("gpt-4o") is True
    assert gw.supports_response_format("no-such-model-xyz") is False
    assert gw.token_count("scripted/agent", "x" * 40) == 10
    assert gw.token_count("scripted/agent", [{"role": "user", "content": "y" * 80}]) == 20
    assert 0 < gw.token_count("gpt-4o", "hello world, how are the tides today?") < 20


def test_redact_removes_keys_and_flattens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXAMPLE_API_KEY", "very-secret-value-123")
    text = redact(
        "Incorrect key very-secret-value-123 and sk-abcdefghijklmnop given\n  response_format.type\n"
    )
    assert "very-secret-value-123" not in text and "sk-abcdefghijklmnop" not in text
    # Every line of the provider's message, on one line: what was refused often comes after the first.
    assert text == "Incorrect key [redacted] and [redacted] given response_format.type"


def test_a_first_call_timeout_names_the_set_up_allowance() -> None:
    """The outer guard of a provider's first call allows set-up time on top of ``llm_timeout_s``; the
    message said "no answer within 10 s" of a call that had been given 40."""
    from core.llm.gateway import FirstCallTimeout, _map_error

    error = _map_error(FirstCallTimeout(10.0, 30.0), "openai/m", 10.0)
    assert isinstance(error, LLMTimeout)
    assert "no answer within 40 s" in str(error) and "llm_timeout_s 10 s plus 30 s" in str(error)
