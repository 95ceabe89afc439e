"""Provider faults, each driven through a full task over litellm's real HTTP path to a loopback fake.

Nothing inside the project is mocked: the fake server (tests/fakes/llm_server.py) answers on
127.0.0.1 as an OpenAI-compatible provider, and every assertion about "requests sent" counts what
it really received.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.config import Settings, load_settings
from core.domain import TaskStatus
from core.domain.facts import EventKind, FinishReason, WarningCode
from core.errors import ConfigurationError
from core.llm import LLMGateway, LLMTimeout
from core.llm import gateway as gateway_module
from core.tasks.service import TaskService
from core.validation.warnings import read_warnings
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

AGENT = "openai/fake-agent"
VALIDATOR = "openai/fake-validator"


def _verdict(status: str = "accepted") -> Reply:
    # One citation: an acceptance citing nothing while evidence exists does not count (coherence checks).
    cited = [{"claim": "the depth", "evidence_id": "E1", "quote": "Mariana", "verdict": "supported"}]
    return Reply.structured(
        {
            "goal_achievement": "g",
            "completeness": "c",
            "rule_compliance": "r",
            "status": status,
            "score": 0.9,
            "citations": cited,
        }
    )


@pytest.fixture
def provider(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    """The fake as the process's OpenAI endpoint (until per-role profiles carry api_base per call)."""
    monkeypatch.setenv("OPENAI_API_BASE", fake_llm.openai_base)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-key")
    return fake_llm


def _settings(sqlite_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "db_url": sqlite_url,
        "agent_model": AGENT,
        "validator_model": VALIDATOR,
        "llm_num_retries": 2,
        "max_validation_attempts": 1,
    }
    return load_settings(**{**values, **overrides})


async def _run(
    settings: Settings, question: str = "How deep is the Mariana Trench?"
) -> tuple[Workspace, str]:
    ws = await Workspace.open(settings, gateway=LLMGateway(settings, retry_backoff_s=0.01))
    service = TaskService(ws)
    task = await service.run((await service.create(question)).id)
    return ws, task.id


async def _events(ws: Workspace, task_id: str, kind: EventKind) -> list[Any]:
    return [e for e in await ws.store.get_task_events(task_id) if e.kind == kind]


async def test_retry_after_is_honoured(provider: FakeLLMServer, sqlite_url: str) -> None:
    provider.push(Reply.rate_limited(retry_after_s=1), Reply.text("About 10,935 metres."), _verdict())
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        task = await ws.store.get_task(task_id)
        assert task.status is TaskStatus.AWAITING_FEEDBACK
        first, second = provider.chat_requests()[:2]
        # The header said 1 s; the gateway's own backoff here is 0.01 s. Never sooner, no upper bound.
        assert second.at - first.at >= 1.0
        assert len(provider.chat_requests()) == 3
    finally:
        await ws.close()


@pytest.mark.parametrize(
    ("fault", "label"),
    [
        (Reply.empty_choices(), "reply had no choices"),
        (Reply.missing_message(), "could not be read"),
        (Reply.malformed(), "could not be read"),
    ],
    ids=["empty-choices", "missing-message", "malformed-body"],
)
async def test_an_unreadable_reply_is_a_clear_provider_error(
    provider: FakeLLMServer, sqlite_url: str, fault: Reply, label: str
) -> None:
    provider.push(fault)
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        task = await ws.store.get_task(task_id)
        assert task.status is TaskStatus.FAILED
        assert len(provider.chat_requests()) == 1  # read as a reply, not retried as a dropped connection
        finished = await _events(ws, task_id, EventKind.RUN_FINISHED)
        assert len(finished) == 1
        error = finished[0].payload["error"]
        assert finished[0].payload["finish_reason"] == FinishReason.LLM_ERROR
        assert label in error and AGENT in error
        assert "cannot reach" not in error and "Traceback" not in error and "\n" not in error
        failed = await _events(ws, task_id, EventKind.LLM_CALL_FAILED)
        assert [e.payload["kind"] for e in failed] == ["malformed_response"]
    finally:
        await ws.close()


async def test_an_unreachable_provider_is_labelled_and_retried(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    provider.stop()
    ws, task_id = await _run(_settings(sqlite_url, llm_num_retries=1))
    try:
        finished = await _events(ws, task_id, EventKind.RUN_FINISHED)
        assert "cannot reach the provider" in finished[0].payload["error"]
        assert "after 2 attempts" in finished[0].payload["error"]
        assert (await ws.store.get_task(task_id)).status is TaskStatus.FAILED
    finally:
        await ws.close()


async def test_missing_key_is_a_configuration_error_with_no_request(
    provider: FakeLLMServer, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    settings = _settings(sqlite_url)
    gateway = LLMGateway(settings, retry_backoff_s=0.01)
    ws = await Workspace.open(settings, gateway=gateway)
    try:
        service = TaskService(ws)
        # Refused before anything is written or sent: no task to fail, no request, no retry.
        with pytest.raises(ConfigurationError, match="no API key"):
            await service.create("A question?")
        assert provider.requests == []
        assert not gateway.usage
        assert await ws.store.list_tasks() == []
    finally:
        await ws.close()


async def test_length_on_a_tool_turn_retries_once_with_more_tokens(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    provider.push(
        Reply.tools(("search_corpus", {"query": "Mariana tre"}), finish_reason="length"),
        Reply.tools(("search_corpus", {"query": "Mariana Trench depth"})),
        Reply.text("About 10,935 metres."),
        _verdict(),
    )
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        task = await ws.store.get_task(task_id)
        assert task.status is TaskStatus.AWAITING_FEEDBACK
        chat = provider.chat_requests()
        assert len(chat) == 4
        assert "max_tokens" not in (chat[0].body or {})
        assert (chat[1].body or {})["max_tokens"] > 0
        # The cut turn's half-written call is dropped with its reply: only the retried call is on record.
        responses = await _events(ws, task_id, EventKind.LLM_RESPONSE_RECEIVED)
        asked = [json.loads(c["arguments"]) for e in responses for c in e.payload["tool_calls"]]
        assert asked == [{"query": "Mariana Trench depth"}]
        failed = await _events(ws, task_id, EventKind.LLM_CALL_FAILED)
        assert [e.payload["kind"] for e in failed] == ["truncated"]
        assert failed[0].payload["retry_max_tokens"] == (chat[1].body or {})["max_tokens"]
    finally:
        await ws.close()


async def test_length_on_the_final_answer_goes_to_review_marked_truncated(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    provider.push(
        Reply.text("The trench is about 10,9", finish_reason="length"),
        Reply.text("The trench is about 10,935 metres deep at the Challenger", finish_reason="length"),
        _verdict("accepted"),
    )
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        task = await ws.store.get_task(task_id)
        assert task.status is TaskStatus.NEEDS_REVIEW  # never awaiting_feedback, though "accepted"
        assert len(provider.chat_requests()) == 3  # the retry with more room, then the validator
        attempt = (await ws.store.list_attempts(task_id))[0]
        assert attempt.finish_reason == FinishReason.TRUNCATED
        assert (attempt.final_output or "").endswith("at the Challenger")
        changes = await _events(ws, task_id, EventKind.TASK_STATUS_CHANGED)
        assert "cut off" in changes[-1].payload["reason"]
        validation = (await ws.store.list_validations(task_id))[0]
        codes = [w.code for w in read_warnings(validation.debug)]
        assert WarningCode.TRUNCATED_ANSWER in codes
    finally:
        await ws.close()


async def test_length_on_the_finalization_answer_goes_to_review_marked_truncated(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    # The tool budget is spent, so the closing answer comes from the no-tools finalization call;
    # cut off there it is a fragment, as it is inside the loop.
    provider.push(
        Reply.tools(("search_corpus", {"query": "Mariana Trench depth"})),
        Reply.text("The trench is about 10,935 metres deep at the Chall", finish_reason="length"),
        _verdict("accepted"),
    )
    ws, task_id = await _run(_settings(sqlite_url, max_tool_iterations=1))
    try:
        task = await ws.store.get_task(task_id)
        assert task.status is TaskStatus.NEEDS_REVIEW  # never awaiting_feedback, though "accepted"
        assert (provider.chat_requests()[1].body or {}).get("tools") is None  # the finalization call
        attempt = (await ws.store.list_attempts(task_id))[0]
        assert attempt.finish_reason == FinishReason.TRUNCATED
        assert (attempt.final_output or "").endswith("at the Chall")
        changes = await _events(ws, task_id, EventKind.TASK_STATUS_CHANGED)
        assert "cut off" in changes[-1].payload["reason"]
    finally:
        await ws.close()


def _validator_responder(window: int) -> Any:
    def respond(request: RecordedRequest) -> Reply:
        text = request.messages[-1].get("content") or ""
        if "# Evidence review, chunk" in text:
            return Reply.structured({"findings": [], "notes": "nothing contradicts the answer"})
        if "verdict over chunk findings" in text:
            return _verdict("accepted")
        return Reply.context_exceeded(window=window, asked=window * 3)

    return respond


async def test_context_overflow_switches_to_chunked_validation(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    provider.push(
        Reply.tools(
            ("search_corpus", {"query": "Mariana Trench"}), ("search_corpus", {"query": "Challenger Deep"})
        ),
        Reply.text("About 10,935 metres."),
    )
    provider.responder = _validator_responder(window=1200)
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        validation = (await ws.store.list_validations(task_id))[0]
        debug = validation.debug
        assert debug["strategy"] == "chunked", debug.get("error")
        overflow = debug["context_overflow"]
        assert overflow["measured_window"] == 1200 and overflow["reported_by_provider"] is True
        assert "context_length_exceeded" not in (debug.get("error") or "")
        codes = [w.code for w in read_warnings(debug)]
        assert WarningCode.CONTEXT_OVERFLOW in codes and WarningCode.CHUNKED_VALIDATION in codes
        assert validation.result["status"] == "accepted", (debug.get("error"), debug.get("findings_fold"))
        validator_calls = [
            r for r in provider.chat_requests() if (r.body or {}).get("model") == "fake-validator"
        ]
        assert len(validator_calls) == 1 + debug["chunk_count"] + 1  # refused, chunks, verdict
    finally:
        await ws.close()


@pytest.mark.parametrize(
    "fault", [Reply.malformed(), Reply.missing_message()], ids=["malformed-body", "no-message"]
)
async def test_ollama_unreadable_reply_is_not_a_connection_error(
    fake_llm: FakeLLMServer, sqlite_url: str, monkeypatch: pytest.MonkeyPatch, fault: Reply
) -> None:
    monkeypatch.setenv("OLLAMA_API_BASE", fake_llm.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-key")  # the validator's key, checked before the run
    fake_llm.push(fault)
    ws, task_id = await _run(_settings(sqlite_url, agent_model="ollama_chat/fake-model"))
    try:
        assert [r.path for r in fake_llm.chat_requests()] == ["/api/chat"]
        error = (await _events(ws, task_id, EventKind.RUN_FINISHED))[0].payload["error"]
        assert "could not be read" in error and "cannot reach" not in error
        assert (await ws.store.get_task(task_id)).status is TaskStatus.FAILED
    finally:
        await ws.close()


async def test_ollama_retry_after_is_honoured(
    fake_llm: FakeLLMServer, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_API_BASE", fake_llm.url)
    monkeypatch.setenv("OPENAI_API_BASE", fake_llm.openai_base)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-key")
    fake_llm.push(Reply.rate_limited(retry_after_s=1), Reply.text("About 10,935 metres."), _verdict())
    ws, task_id = await _run(_settings(sqlite_url, agent_model="ollama_chat/fake-model"))
    try:
        first, second = fake_llm.chat_requests()[:2]
        assert first.path == second.path == "/api/chat"
        assert second.at - first.at >= 1.0
        assert (await ws.store.get_task(task_id)).status is TaskStatus.AWAITING_FEEDBACK
    finally:
        await ws.close()


async def test_a_slow_provider_times_out_on_its_first_call_too(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    """The first call's set-up allowance never lets a hung provider off: litellm's own timeout bounds
    the HTTP exchange, so the call still ends as a timeout, after one request and its retries."""
    gateway_module._WARMED_PROVIDERS.discard("openai")
    provider.push(Reply.held(), Reply.held())
    settings = _settings(sqlite_url, llm_timeout_s=0.5, llm_num_retries=1)
    gateway = LLMGateway(settings, retry_backoff_s=0.01)
    with pytest.raises(LLMTimeout, match=r"timed out|no answer within"):
        await gateway.complete(model=AGENT, messages=[{"role": "user", "content": "hi"}])
    assert len(provider.chat_requests()) == 2
    assert [u.error_kind for u in gateway.usage] == ["timeout", "timeout"]


async def test_a_first_call_timeout_names_the_bound_that_ended_it(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    """The provider's first call in the process, held by the server until the test ends: litellm's
    HTTP timeout (llm_timeout_s) ends it, not the outer guard's set-up allowance, and the message
    says so. It said "timed out (Request timed out)", naming no bound at all."""
    gateway_module._WARMED_PROVIDERS.discard("openai")
    provider.push(Reply.held())
    gateway = LLMGateway(_settings(sqlite_url, llm_timeout_s=0.5, llm_num_retries=0))
    with pytest.raises(LLMTimeout) as caught:
        await gateway.complete(model=AGENT, messages=[{"role": "user", "content": "hi"}])
    assert len(provider.chat_requests()) == 1  # it reached the server, which never answered
    assert f"{AGENT}: no answer within 0.5 s" in str(caught.value), caught.value
    assert "allowed for the provider's first call" not in str(caught.value)


async def test_a_refused_key_is_an_authentication_error_not_retried(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    provider.push(Reply.unauthorized())
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        assert len(provider.chat_requests()) == 1
        error = (await _events(ws, task_id, EventKind.RUN_FINISHED))[0].payload["error"]
        assert "authentication failed" in error and "sk-test-fake-key" not in error
        assert (await ws.store.get_task(task_id)).status is TaskStatus.FAILED
    finally:
        await ws.close()


async def test_a_long_retry_after_is_reported_not_waited_for(
    provider: FakeLLMServer, sqlite_url: str
) -> None:
    provider.push(Reply.rate_limited(retry_after_s=3600))
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        assert len(provider.chat_requests()) == 1
        error = (await _events(ws, task_id, EventKind.RUN_FINISHED))[0].payload["error"]
        assert "rate limited" in error and "wait 3600 s" in error
        assert (await ws.store.get_task(task_id)).status is TaskStatus.FAILED
    finally:
        await ws.close()


async def test_retry_after_ms_is_read(provider: FakeLLMServer, sqlite_url: str) -> None:
    """OpenAI's ``retry-after-ms`` (no ``Retry-After`` beside it): a 600 000 ms wait is past
    ``MAX_RETRY_AFTER_S``, so the call ends at once naming the wait; ignored, it was retried."""
    body = json.dumps({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}})
    provider.push(
        Reply(kind="fault", status=429, headers={"retry-after-ms": "600000"}, raw_body=body),
        Reply.text("About 10,935 metres."),
    )
    gateway = LLMGateway(_settings(sqlite_url, llm_num_retries=2), retry_backoff_s=0.01)
    with pytest.raises(Exception, match=r"asks to wait 600 s"):
        await gateway.complete(model=AGENT, messages=[{"role": "user", "content": "hi"}])
    assert len(provider.chat_requests()) == 1
