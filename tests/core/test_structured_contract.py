"""Structured output negotiated per endpoint, never assumed (issue #28, item 1).

Each fault is a loopback fake answering the way a real server does, driven through full tasks over
litellm's real HTTP path: llama-cpp-python 0.3.36 answers HTTP 500 with a multi-line pydantic
message to ``response_format`` of type ``json_schema`` and grammar-constrains
``{"type": "json_object", "schema": ...}``; some servers refuse every ``response_format``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.config import Settings, load_settings
from core.domain import TaskStatus
from core.llm import LLMGateway
from core.llm.contract import BOOK
from core.profiles import ModelProfile, ModelRole
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

ANSWER = "The Mariana Trench is about 10,935 metres deep."
VERDICT = {
    "goal_achievement": "g",
    "completeness": "c",
    "rule_compliance": "r",
    "status": "accepted",
    "score": 0.9,
}
# What llama-cpp-python 0.3.36's server says (HTTP 500) to a json_schema response_format.
LLAMA_CPP_REFUSAL = (
    "1 validation error for CreateChatCompletionRequest\n"
    "response_format.type\n"
    "  Input should be 'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]"
)


def _fault(status: int, message: str) -> Reply:
    body = {"error": {"message": message, "type": "internal_server_error"}}
    return Reply(kind="fault", status=status, raw_body=json.dumps(body))


def _llama_cpp_like(request: RecordedRequest) -> Reply:
    """Agent turns answer; a judge's json_schema gets the 500, its json_object + schema a verdict."""
    body = request.body or {}
    response_format = body.get("response_format")
    if response_format is None and "Evidence" not in request.text:
        return Reply.text(ANSWER)
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        return _fault(500, LLAMA_CPP_REFUSAL)
    return Reply.structured(VERDICT)


def _settings(sqlite_url: str, agent: FakeLLMServer, judge: FakeLLMServer, **more: Any) -> Settings:
    return load_settings(
        db_url=sqlite_url,
        agent_model="openai/agent-local",
        validator_model="openai/judge-local",
        max_validation_attempts=1,
        llm_num_retries=2,
        profiles={
            ModelRole.AGENT: ModelProfile(api_base=agent.openai_base, no_api_key=True),
            ModelRole.VALIDATOR: ModelProfile(api_base=judge.openai_base, no_api_key=True),
        },
        **more,
    )


async def _run(settings: Settings, ws: Workspace | None = None) -> tuple[Workspace, str]:
    ws = ws or await Workspace.open(settings, gateway=LLMGateway(settings, retry_backoff_s=0.01))
    service = TaskService(ws)
    task = await service.run((await service.create("How deep is the Mariana Trench?")).id)
    return ws, task.id


def _formats(server: FakeLLMServer) -> list[Any]:
    return [
        (r.body or {}).get("response_format", {}).get("type")
        if (r.body or {}).get("response_format")
        else None
        for r in server.chat_requests()
    ]


async def test_a_500_to_json_schema_steps_down_to_the_servers_constrained_json_mode(
    fake_llm_factory: Any, sqlite_url: str
) -> None:
    agent, judge = fake_llm_factory(), fake_llm_factory()
    agent.responder = _llama_cpp_like
    judge.responder = _llama_cpp_like
    ws, task_id = await _run(_settings(sqlite_url, agent, judge))
    try:
        assert (await ws.store.get_task(task_id)).status is TaskStatus.AWAITING_FEEDBACK
        # One refusal, never the same refused request three times (retries are for transport faults).
        assert _formats(judge) == ["json_schema", "json_object"]
        second = judge.chat_requests()[1].body or {}
        assert second["response_format"]["schema"]["required"]  # the server's grammar gets the schema
        validation = (await ws.store.list_validations(task_id))[0]
        assert validation.result["status"] == "accepted"
        assert validation.debug["structured_contract"] == "json_object"
        (fallback,) = validation.debug["contract_fallbacks"]
        # The whole provider message, every line of it, not "1 validation error".
        assert (
            fallback.startswith("json_schema refused:")
            and "Input should be 'text' or 'json_object'" in fallback
        )

        # Remembered for the endpoint and model: the next task asks the working contract first.
        _, second_task = await _run(ws.settings, ws)
        assert _formats(judge)[2:] == ["json_object"]
        validation = (await ws.store.list_validations(second_task))[0]
        assert validation.debug["structured_contract"] == "json_object"
        assert validation.debug["contract_fallbacks"] == [fallback]
    finally:
        await ws.close()


async def test_a_server_refusing_every_response_format_gets_the_prompt_only_contract(
    fake_llm_factory: Any, sqlite_url: str
) -> None:
    agent, judge = fake_llm_factory(), fake_llm_factory()
    agent.push(Reply.text(ANSWER))

    def refuse_formats(request: RecordedRequest) -> Reply:
        if (request.body or {}).get("response_format"):
            return _fault(500, "Internal Server Error")  # says nothing: a 500 on the first such request
        return Reply.structured(VERDICT)

    judge.responder = refuse_formats
    ws, task_id = await _run(_settings(sqlite_url, agent, judge))
    try:
        assert (await ws.store.get_task(task_id)).status is TaskStatus.AWAITING_FEEDBACK
        assert _formats(judge) == ["json_schema", "json_object", None]
        debug = (await ws.store.list_validations(task_id))[0].debug
        assert debug["structured_contract"] == "prompt_only"
        assert [f.split(":", 1)[0] for f in debug["contract_fallbacks"]] == [
            "json_schema refused",
            "json_object refused",
        ]
    finally:
        await ws.close()


async def test_a_500_after_the_contract_worked_is_a_server_fault_retried_not_a_refusal(
    fake_llm_factory: Any, sqlite_url: str
) -> None:
    agent, judge = fake_llm_factory(), fake_llm_factory()
    agent.push(Reply.text(ANSWER), Reply.text(ANSWER))
    judge.push(Reply.structured(VERDICT), Reply.server_error(), Reply.structured(VERDICT))
    settings = _settings(sqlite_url, agent, judge)
    ws, _first = await _run(settings)
    try:
        _, second = await _run(settings, ws)
        assert _formats(judge) == ["json_schema", "json_schema", "json_schema"]
        debug = (await ws.store.list_validations(second))[0].debug
        assert debug["structured_contract"] == "json_schema" and "contract_fallbacks" not in debug
    finally:
        await ws.close()


async def test_the_whole_provider_message_is_kept_in_the_stored_reason(
    fake_llm_factory: Any, sqlite_url: str
) -> None:
    agent, judge = fake_llm_factory(), fake_llm_factory()
    agent.push(Reply.text(ANSWER))
    judge.responder = lambda _request: _fault(500, LLAMA_CPP_REFUSAL)
    ws, task_id = await _run(_settings(sqlite_url, agent, judge))
    try:
        validation = (await ws.store.list_validations(task_id))[0]
        assert validation.result["status"] == "validator_error"
        error = validation.debug["error"]
        assert "1 validation error for CreateChatCompletionRequest" in error
        assert "response_format.type" in error and "Input should be 'text' or 'json_object'" in error
        assert "\n" not in error  # one line, every part of it
        # Two refusals (json_schema, json_object), then the prompt-only request retried as a server fault.
        assert _formats(judge) == ["json_schema", "json_object", None, None, None]
    finally:
        await ws.close()


@pytest.mark.parametrize(
    ("model", "expect"),
    [
        ("ollama_chat/judge-local", "format"),
        ("hosted_vllm/judge-local", "guided_json"),
    ],
)
async def test_json_mode_uses_the_servers_own_constrained_decoding(
    fake_llm_factory: Any, sqlite_url: str, model: str, expect: str
) -> None:
    """Ollama gets the schema as ``format``; vLLM's JSON mode carries ``guided_json``."""
    judge = fake_llm_factory()
    base = judge.url if model.startswith("ollama") else judge.openai_base
    settings = load_settings(
        db_url=sqlite_url,
        agent_model="scripted/agent",
        validator_model=model,
        profiles={ModelRole.VALIDATOR: ModelProfile(api_base=base, no_api_key=True, context_window=8192)},
    )
    judge.push(Reply.structured(VERDICT))
    gateway = LLMGateway(settings, retry_backoff_s=0.01)
    from core.validation.schema import ValidatorOutput

    response = await gateway.complete(
        model=model,
        role=ModelRole.VALIDATOR,
        messages=[{"role": "user", "content": "Judge."}],
        response_format=ValidatorOutput,
    )
    body = judge.chat_requests()[-1].body or {}
    assert response.structured_contract == "json_schema"
    if expect == "format":
        assert body["format"]["properties"]["status"]  # the schema itself, Ollama's constrained decoding
        return
    key = (base, model)
    BOOK.refused(key, BOOK.current(key)[0], "test: json_schema refused")
    judge.push(Reply.structured(VERDICT))
    response = await gateway.complete(
        model=model,
        role=ModelRole.VALIDATOR,
        messages=[{"role": "user", "content": "Judge."}],
        response_format=ValidatorOutput,
    )
    body = judge.chat_requests()[-1].body or {}
    assert response.structured_contract == "json_object"
    assert body["response_format"] == {"type": "json_object"} and body[expect]["properties"]["status"]


async def test_test_connection_reports_the_contract_and_whether_tool_calls_come_back(
    fake_llm_factory: Any, sqlite_url: str
) -> None:
    from core.model_setup import probe_connection

    server = fake_llm_factory()

    def llama_cpp_without_tools(request: RecordedRequest) -> Reply:
        body = request.body or {}
        if body.get("tools"):
            return Reply.text("I cannot call tools.")  # the tools were ignored
        return _llama_cpp_like(request) if body.get("response_format") else Reply.text("ready")

    server.responder = llama_cpp_without_tools
    settings = _settings(sqlite_url, server, server)
    report = await probe_connection(settings, ModelRole.VALIDATOR)
    assert report.answer == "ready"
    assert report.contract == "json_object" and report.contract_fallbacks[0].startswith("json_schema refused")
    assert report.tool_calls is False
    lines = report.lines()
    assert lines[1].startswith("Structured output: json_object (json_schema refused:")
    assert lines[2].startswith("Tool calls: none returned")

    server.responder = lambda request: (
        Reply.tools(("report_ready", {"ready": True}))
        if (request.body or {}).get("tools")
        else Reply.text("ready")
    )
    agent_report = await probe_connection(settings, ModelRole.AGENT)
    assert agent_report.tool_calls is True and agent_report.lines()[2] == "Tool calls: returned"


def test_a_grammar_gets_bounded_numbers_as_the_values_in_range() -> None:
    """A JSON-schema grammar keeps a number's type but not its bounds; the values keep the range."""
    from core.llm.contract import StructuredContract, contract_params
    from core.validation.schema import ValidatorOutput

    schema = ValidatorOutput.model_json_schema()
    sent = contract_params(StructuredContract.JSON_OBJECT, "verdict", schema, "openai", local=True)
    score = sent["response_format"]["schema"]["properties"]["score"]
    assert score["enum"][0] == 0.0 and score["enum"][-1] == 1.0 and len(score["enum"]) == 21
    assert "type" not in score and "maximum" not in score
    assert schema["properties"]["score"]["maximum"] == 1.0  # the caller's schema, still checked, is untouched
    ranged = {"type": "integer", "minimum": 1, "maximum": 5}
    assert contract_params(StructuredContract.JSON_OBJECT, "x", ranged, "openai", local=True)[
        "response_format"
    ]["schema"] == {"enum": [1, 2, 3, 4, 5]}
