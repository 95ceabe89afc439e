from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from core.config import Settings
from core.errors import ConfigurationError
from core.llm import LLMGateway, reset_scripted_stats, scripted_stats
from core.llm.structured import (
    GENERIC_FEEDBACK,
    SchemaFailure,
    check_structured,
    complete_structured,
)
from tests.core.conftest import ScriptFactory


class Answer(BaseModel):
    verdict: str
    score: float


GOOD = json.dumps({"verdict": "fine", "score": 0.5})
BASE = [{"role": "system", "content": "be strict"}, {"role": "user", "content": "judge this"}]


class RecordingGateway(LLMGateway):
    """The real gateway, keeping a copy of every request's messages."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, retry_backoff_s=0.001)
        self.sent: list[list[dict[str, Any]]] = []

    async def complete(self, **kwargs: Any) -> Any:
        self.sent.append([dict(m) for m in kwargs["messages"]])
        return await super().complete(**kwargs)


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)


async def _ask(gateway: LLMGateway, **kwargs: Any) -> tuple[Any, list[SchemaFailure]]:
    seen: list[SchemaFailure] = []

    async def on_failure(failure: SchemaFailure) -> None:
        seen.append(failure)

    messages = [dict(m) for m in BASE]
    defaults: dict[str, Any] = {"model": "scripted/validator", "output": Answer, "max_retries": 2}
    outcome = await complete_structured(
        gateway, messages=messages, on_failure=on_failure, **{**defaults, **kwargs}
    )
    assert messages == BASE, "the caller's messages must never carry the ephemeral re-ask"
    return outcome, seen


async def test_recovered_schema_failure_reasks_once_with_the_error(make_settings: ScriptFactory) -> None:
    settings = make_settings(
        [{"model": "validator", "turns": [{"content": '{"verdict": "x"}'}, {"content": GOOD}]}]
    )
    gateway = RecordingGateway(settings)
    outcome, seen = await _ask(gateway)
    assert outcome.status == "ok" and outcome.value == Answer(verdict="fine", score=0.5)
    assert outcome.retries == 1 and outcome.calls == 2 and outcome.model_used == "scripted/validator"
    assert [(f.stage, f.attempt, f.retries) for f in seen] == [("schema-validate", 1, 0)]
    assert "score" in seen[0].message and seen[0].raw_output == '{"verdict": "x"}'
    retry = gateway.sent[1]
    assert retry[:2] == BASE
    assert retry[2] == {"role": "assistant", "content": '{"verdict": "x"}'}
    assert retry[3]["role"] == "user" and "score" in retry[3]["content"]
    assert outcome.usage.prompt_tokens > 0 and len(gateway.usage) == 2


async def test_stuck_loop_stops_after_two_identical_errors(make_settings: ScriptFactory) -> None:
    settings = make_settings(
        [{"model": "validator", "turns": [{"content": "I think it is fine."}, {"content": "It is fine."}]}]
    )
    gateway = RecordingGateway(settings)
    outcome, seen = await _ask(gateway, max_retries=6)
    assert outcome.status == "schema-stuck-loop" and outcome.value is None
    assert len(gateway.sent) == 2 and [f.stage for f in seen] == ["json-parse", "json-parse"]
    assert seen[0].message == seen[1].message and outcome.retries == 1


async def test_retry_exhausted_and_prompt_carries_only_latest_failure(make_settings: ScriptFactory) -> None:
    # Conversation 0 only answers requests whose feedback names a JSON parse error, so the three
    # attempts get three different mistakes and the third request shows the second failure only.
    third = json.dumps({"score": 0.1})
    settings = make_settings(
        [
            {
                "model": "validator",
                "match": "Expecting value",
                "turns": [{"content": "unused"}, {"content": json.dumps({"verdict": "x", "score": "high"})}],
            },
            {"model": "validator", "turns": [{"content": "prose, not JSON " * 50}, {"content": third}]},
        ]
    )
    gateway = RecordingGateway(settings)
    outcome, seen = await _ask(gateway, max_retries=2)
    assert outcome.status == "schema-retry-exhausted" and outcome.retries == 2
    assert [f.stage for f in seen] == ["json-parse", "schema-validate", "schema-validate"]
    assert [f.retries for f in seen] == [0, 1, 2]
    first, second, last = gateway.sent
    for request, failure in ((second, seen[0]), (last, seen[1])):
        feedback = request[-1]["content"]
        assert _chars(request) <= _chars(first) + len(failure.raw_output) + len(feedback)
        assert len(request) == len(first) + 2 and failure.message in feedback
    assert "Expecting value" not in json.dumps(last)


async def test_fallback_model_after_stuck_primary(make_settings: ScriptFactory) -> None:
    settings = make_settings(
        [
            {"model": "validator", "turns": [{"content": "nope"}, {"content": "nope"}]},
            {"model": "fallback", "turns": [{"content": GOOD}]},
        ]
    )
    outcome, seen = await _ask(RecordingGateway(settings), fallback_model="scripted/fallback")
    assert outcome.status == "ok" and outcome.model_used == "scripted/fallback"
    assert [f.model for f in seen] == ["scripted/validator", "scripted/validator"]


async def test_timeout_never_causes_a_schema_reask(make_settings: ScriptFactory) -> None:
    settings = make_settings(
        [{"model": "validator", "turns": [{"error": "timeout"}, {"content": GOOD}]}], llm_num_retries=1
    )
    reset_scripted_stats()
    gateway = RecordingGateway(settings)
    outcome, seen = await _ask(gateway)
    assert outcome.status == "transport-error" and outcome.error_kind == "timeout" and seen == []
    requests = [r for r in scripted_stats().requests if r.model == "validator"]
    assert len(requests) == 2 and all(r.turn == 0 and r.message_count == 2 for r in requests)
    assert [u.ok for u in gateway.usage] == [False, False]


async def test_real_deadline_timeout_is_transport_error(make_settings: ScriptFactory) -> None:
    settings = make_settings(
        [{"model": "validator", "turns": [{"content": GOOD, "delay_s": 3600}]}], llm_num_retries=0
    )
    outcome, seen = await _ask(RecordingGateway(settings), timeout_s=0.05)
    assert outcome.status == "transport-error" and outcome.error_kind == "timeout" and not seen


async def test_raising_feedback_builder_falls_back_to_generic_message(make_settings: ScriptFactory) -> None:
    settings = make_settings([{"model": "validator", "turns": [{"content": "{"}, {"content": GOOD}]}])
    gateway = RecordingGateway(settings)

    def broken(failure: SchemaFailure) -> str:
        raise RuntimeError("builder bug")

    outcome, _ = await _ask(gateway, feedback_builder=broken)
    assert outcome.status == "ok" and gateway.sent[1][-1]["content"] == GENERIC_FEEDBACK


async def test_empty_replies_end_as_empty(make_settings: ScriptFactory) -> None:
    settings = make_settings([{"model": "validator", "turns": [{"content": ""}, {"content": "  "}]}])
    outcome, seen = await _ask(RecordingGateway(settings))
    assert outcome.status == "empty" and outcome.value is None and len(seen) == 2


async def test_dict_schema_is_checked_with_jsonschema(make_settings: ScriptFactory) -> None:
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}
    settings = make_settings(
        [{"model": "validator", "turns": [{"content": '{"a": "x"}'}, {"content": '{"a": 3}'}]}]
    )
    reset_scripted_stats()
    outcome, seen = await _ask(RecordingGateway(settings), output=schema)
    assert outcome.status == "ok" and outcome.value == {"a": 3}
    assert seen[0].stage == "schema-validate" and seen[0].path == "a" and "integer" in seen[0].message
    assert scripted_stats().requests[0].response_format is True


def test_check_structured_rules() -> None:
    assert check_structured("```json\n" + GOOD + "\n```", Answer)[1] is None
    assert check_structured("Result: " + GOOD, Answer)[1] == (
        "json-parse",
        "Expecting value at line 1 column 1",
    )
    stage, message = check_structured(GOOD + " ok", Answer)[1] or ("", "")
    assert stage == "json-parse" and "without text around it" in message
    assert check_structured("[1]", Answer)[1] == ("schema-validate", "expected a JSON object, got list")
    assert check_structured("[" * 100_000, Answer)[1] is not None
    with pytest.raises(ConfigurationError, match="invalid output JSON schema"):
        check_structured("{}", {"type": "no-such-type"})


async def test_gateway_fixture_is_usable(
    make_settings: ScriptFactory, gateway_for: Callable[[Settings], LLMGateway]
) -> None:
    settings = make_settings([{"model": "validator", "turns": [{"content": GOOD}]}])
    outcome, _ = await _ask(gateway_for(settings))
    assert outcome.ok and outcome.calls == 1 and outcome.failures == []


def test_a_raw_newline_inside_a_string_is_read_but_prose_around_the_json_is_not() -> None:
    """A grammar-constrained small model writes raw control characters inside strings (SmolLM2 on
    llama-cpp-python did); that is a formatting slip, read as the text it plainly is."""
    value, problem = check_structured('{"answer": "two lines:\nhere\tand there"}', {"type": "object"})
    assert problem is None and value == {"answer": "two lines:\nhere\tand there"}
    _, problem = check_structured('Sure! {"answer": "x"}', {"type": "object"})
    assert problem is not None and problem[0] == "json-parse"
