"""The scripted provider, driven through the real ``litellm.acompletion`` path."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigurationError
from core.llm.scripted import (
    load_script,
    register_scripted_provider,
    reset_scripted_stats,
    scripted_provider,
    scripted_stats,
)
from tests.gates import wait_until

SCRIPTS = Path(__file__).parent / "scripts"
BASIC = (SCRIPTS / "basic.json").resolve()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _provider() -> None:
    register_scripted_provider()
    reset_scripted_stats()


def write_script(tmp_path: Path, data: Any, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


async def call(model: str, messages: list[dict[str, Any]], script: Path = BASIC, **kwargs: Any) -> Any:
    import litellm

    return await litellm.acompletion(
        model=model, messages=messages, api_base=str(script), num_retries=0, **kwargs
    )


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


ASSISTANT = {"role": "assistant", "content": "..."}


def test_import_core_llm_does_not_import_litellm() -> None:
    code = "import core, core.llm, core.config, core.domain; import sys; assert 'litellm' not in sys.modules"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


async def test_selects_first_conversation_whose_model_and_match_fit() -> None:
    tides = await call("scripted/agent", [user("Why are there tides?")])
    assert tides.choices[0].message.tool_calls[0].function.name == "search_corpus"
    generic = await call("scripted/agent", [user("What is the capital of France?")])
    assert generic.choices[0].message.content == "generic answer"
    validator = await call("scripted/validator", [user("Why are there tides?")])
    assert validator.choices[0].message.content == '{"status": "accepted"}'
    used = [(r.model, r.conversation) for r in scripted_stats().requests]
    assert used == [("agent", 0), ("agent", 2), ("validator", 3)]


async def test_match_searches_every_message_including_content_parts() -> None:
    messages = [
        {"role": "system", "content": None},
        {
            "role": "user",
            "content": [{"type": "text", "text": "question about the"}, {"type": "text", "text": "tide"}],
        },
    ]
    resp = await call("scripted/agent", messages)
    assert resp.choices[0].message.tool_calls, "the list-of-parts text should have matched 'tides?'"


async def test_turn_is_the_number_of_assistant_messages() -> None:
    first = [user("tides")]
    second = [*first, ASSISTANT, {"role": "tool", "tool_call_id": "call_0_0", "content": "doc text"}]
    resp = await call("scripted/agent", second)
    assert resp.choices[0].message.content == "Tides come from the moon [E1]."
    assert resp.choices[0].finish_reason == "stop"
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (120, 9)
    again = await call("scripted/agent", first)
    assert again.choices[0].message.tool_calls is not None  # stateless: turn 0 again


async def test_tool_calls_come_back_with_deterministic_ids_and_json_arguments() -> None:
    resp = await call("scripted/agent", [user("tides")])
    calls = resp.choices[0].message.tool_calls
    assert [c.id for c in calls] == ["call_0_0", "call_0_1"]
    assert [c.function.name for c in calls] == ["search_corpus", "read_document"]
    assert json.loads(calls[0].function.arguments) == {"query": "tides"}
    assert resp.choices[0].finish_reason == "tool_calls"
    assert resp.usage.prompt_tokens == len("tides") // 4


async def test_delay_is_awaited_so_concurrent_calls_overlap(tmp_path: Path) -> None:
    """Two calls sit in one long delay together: it is awaited, not slept by the thread."""
    script = write_script(
        tmp_path, {"conversations": [{"model": "slow", "turns": [{"content": "x", "delay_s": 3600}]}]}
    )
    calls = [asyncio.create_task(call("scripted/slow", [user(q)], script)) for q in "ab"]
    await wait_until(lambda: scripted_stats().in_flight == 2, what="both calls inside the delay")
    assert scripted_stats().peak_in_flight == 2
    for task in calls:
        task.cancel()
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
    assert scripted_stats().in_flight == 0


async def test_requests_record_tools_tool_choice_and_response_format() -> None:
    tools = [{"type": "function", "function": {"name": "search_corpus", "parameters": {"type": "object"}}}]
    await call(
        "scripted/agent",
        [user("hello")],
        tools=tools,
        tool_choice="auto",
        response_format={"type": "json_object"},
    )
    (req,) = scripted_stats().requests
    assert req.tool_names == ("search_corpus",)
    assert req.tool_choice == "auto"
    assert req.response_format is True
    assert req.message_count == 1
    reset_scripted_stats()
    assert scripted_stats().requests == []


async def test_the_provider_remembers_only_its_latest_requests() -> None:
    """The default models are scripted: a desk or a worker on them calls it for as long as it runs,
    and a record per call must not stay for ever (what a run sent is in its events)."""
    from core.llm import scripted

    assert isinstance(scripted._stats.requests, deque)
    assert scripted._stats.requests.maxlen == scripted.REQUESTS_KEPT
    await call("scripted/agent", [user("hello")])
    snapshot = scripted_stats().requests
    assert isinstance(snapshot, list) and snapshot[-1].model == "agent"  # a copy, as before


@pytest.mark.parametrize(
    ("kind", "exc_name"),
    [
        ("timeout", "Timeout"),
        ("rate_limit", "RateLimitError"),
        ("server_error", "InternalServerError"),
        ("connection", "APIConnectionError"),
        ("bad_request", "BadRequestError"),
    ],
)
async def test_error_turns_raise_the_matching_litellm_exception(
    tmp_path: Path, kind: str, exc_name: str
) -> None:
    import litellm

    script = write_script(tmp_path, {"conversations": [{"model": "m", "turns": [{"error": kind}]}]})
    for _ in range(2):  # without fail_times it fails every time
        with pytest.raises(getattr(litellm, exc_name)) as info:
            await call("scripted/m", [user("q")], script)
        assert type(info.value).__name__ == exc_name


async def test_fail_times_fails_only_the_first_calls(tmp_path: Path) -> None:
    import litellm

    turn = {"error": "rate_limit", "fail_times": 2, "content": "finally"}
    script = write_script(tmp_path, {"conversations": [{"model": "m", "turns": [turn]}]})
    for _ in range(2):
        with pytest.raises(litellm.RateLimitError):
            await call("scripted/m", [user("q")], script)
    resp = await call("scripted/m", [user("q")], script)
    assert resp.choices[0].message.content == "finally"


async def test_exhausted_script_and_unknown_model_reach_the_caller_with_model_and_turn() -> None:
    import litellm

    messages = [user("capital"), ASSISTANT]
    with pytest.raises(litellm.BadRequestError) as info:
        await call("scripted/agent", messages)
    text = str(info.value)
    assert "scripted/agent" in text and "no turn 1" in text and "conversations[2]" in text
    assert "Traceback" not in text
    with pytest.raises(litellm.BadRequestError) as info:
        await call("scripted/planner", [user("x")])
    assert "scripted/planner" in str(info.value) and "turn 0" in str(info.value)
    assert "no conversation has this model" in str(info.value)


async def test_script_is_reloaded_when_the_file_changes(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"conversations": [{"model": "m", "turns": [{"content": "one"}]}]})
    assert (await call("scripted/m", [user("q")], script)).choices[0].message.content == "one"
    write_script(tmp_path, {"conversations": [{"model": "m", "turns": [{"content": "second version"}]}]})
    assert (await call("scripted/m", [user("q")], script)).choices[0].message.content == "second version"


def test_load_script_parses_the_fixture() -> None:
    script = load_script(BASIC)
    assert [c.model for c in script.conversations] == ["agent", "agent", "agent", "validator"]
    assert script.conversations[0].turns[0].tool_calls[1].arguments == {"doc_id": "moon-1"}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"conversations": [\n  {"model": "a",, }]}', "not valid JSON: Expecting property name"),
        ('{"conversations": [{"model": "a"}]}', "conversations[0].turns: Field required"),
        (
            '{"conversations": [{"model": "a", "turns": [{"content": "x"}, {"content": "y"}, {"error": "boom"}]}]}',
            "conversations[0].turns[2].error: Input should be",
        ),
        (
            '{"conversations": [{"model": "a", "match": "(unclosed", "turns": [{"content": "x"}]}]}',
            "conversations[0].match",
        ),
        (
            '{"conversations": [{"model": "a", "turns": [{"delay_s": 1}]}]}',
            "conversations[0].turns[0]: Value error, a turn needs",
        ),
        (
            '{"conversations": [{"model": "a", "turns": [{"error": "timeout", "fail_times": 1}]}]}',
            "fail_times needs content",
        ),
        (
            '{"conversations": [{"model": "a", "turns": [{"content": "x", "contnet": "y"}]}]}',
            "turns[0].contnet",
        ),
        ("[]", "(top level)"),
    ],
)
def test_invalid_scripts_name_the_file_and_json_path(tmp_path: Path, content: str, expected: str) -> None:
    path = write_script(tmp_path, content, name="broken.json")
    with pytest.raises(ConfigurationError) as info:
        load_script(path)
    message = str(info.value)
    assert "broken.json" in message
    assert expected in message, message
    if "JSON" in expected:
        assert "line 2, column 17" in message


def test_unreadable_script_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"cannot read script .*missing\.json"):
        load_script(tmp_path / "missing.json")


async def test_a_dropped_call_leaves_no_unawaited_coroutine(tmp_path: Path) -> None:
    """litellm calls the provider in an executor thread and awaits the result on the loop; a
    timeout or cancellation in between drops it. Dropped, it must not warn "never awaited"
    (warnings are errors here, so a warning at collection would fail this test)."""
    script = write_script(tmp_path, {"conversations": [{"model": "m", "turns": [{"content": "x"}]}]})
    dropped = scripted_provider().acompletion("m", [user("q")], str(script))
    assert asyncio.iscoroutine(dropped)  # what litellm checks before awaiting it
    del dropped
    gc.collect()
    kept = scripted_provider().acompletion("m", [user("q")], str(script))
    assert (await kept).choices[0].message.content == "x"
