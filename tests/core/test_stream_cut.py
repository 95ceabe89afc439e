"""A stream the server ends early is never a whole answer (issue #28, item 3).

Driven through full tasks over litellm's real HTTP path to the loopback fake, with someone watching
the bus so agent calls stream as they do in the desk. The fake cuts a stream the two ways a real
server does: a bare ``[DONE]`` with no finish reason (llama-cpp-python's server when a second
request interrupts a stream) and a connection closed mid-body (a server killed mid-answer).
"""

from __future__ import annotations

from typing import Any

import pytest

from core.config import Settings, load_settings
from core.domain import TaskStatus
from core.domain.facts import EventKind, FinishReason, WarningCode
from core.llm import LLMGateway
from core.tasks.service import TaskService
from core.validation.warnings import read_warnings
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, Reply

AGENT = "openai/fake-agent"
VALIDATOR = "openai/fake-validator"
WHOLE = "The Mariana Trench is about 10,935 metres deep at the Challenger Deep."


def _verdict(status: str = "accepted") -> Reply:
    return Reply.structured(
        {"goal_achievement": "g", "completeness": "c", "rule_compliance": "r", "status": status, "score": 0.9}
    )


@pytest.fixture
def provider(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    monkeypatch.setenv("OPENAI_API_BASE", fake_llm.openai_base)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-key")
    return fake_llm


def _settings(sqlite_url: str) -> Settings:
    return load_settings(
        db_url=sqlite_url,
        agent_model=AGENT,
        validator_model=VALIDATOR,
        llm_num_retries=2,
        max_validation_attempts=1,
        stream_agent=True,
    )


async def _run(settings: Settings) -> tuple[Workspace, str]:
    ws = await Workspace.open(settings, gateway=LLMGateway(settings, retry_backoff_s=0.01))
    ws.bus.subscribe(lambda _event: None)  # someone watching: agent calls stream, as in the desk
    service = TaskService(ws)
    task = await service.run((await service.create("How deep is the Mariana Trench?")).id)
    return ws, task.id


async def _events(ws: Workspace, task_id: str, kind: EventKind) -> list[Any]:
    return [e for e in await ws.store.get_task_events(task_id) if e.kind == kind]


@pytest.mark.parametrize("how", ["no_finish", "drop", "finish_no_done", "finish_then_drop"])
async def test_a_cut_stream_is_retried_once_and_the_whole_answer_is_judged(
    provider: FakeLLMServer, sqlite_url: str, how: str
) -> None:
    provider.push(Reply.cut_stream("The Mariana Trench is about 10,", how=how), Reply.text(WHOLE), _verdict())
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        assert [r.stream for r in provider.chat_requests()] == [True, True, False]
        task = await ws.store.get_task(task_id)
        assert task.status is TaskStatus.AWAITING_FEEDBACK
        attempt = (await ws.store.list_attempts(task_id))[0]
        assert attempt.finish_reason == FinishReason.STOP and attempt.final_output == WHOLE
        failed = await _events(ws, task_id, EventKind.LLM_CALL_FAILED)
        assert [e.payload["kind"] for e in failed] == ["stream_cut"]
        assert "before the server said it was finished" in failed[0].payload["error"]
    finally:
        await ws.close()


@pytest.mark.parametrize("how", ["no_finish", "drop", "finish_no_done", "finish_then_drop"])
async def test_a_stream_cut_twice_is_truncated_and_goes_to_review(
    provider: FakeLLMServer, sqlite_url: str, how: str
) -> None:
    provider.push(
        Reply.cut_stream("The Mariana Trench is about 10,", how=how),
        Reply.cut_stream("The Mariana Trench is about 10,935 metres", how=how),
        _verdict("accepted"),
    )
    ws, task_id = await _run(_settings(sqlite_url))
    try:
        assert len(provider.chat_requests()) == 3  # the cut turn, its one retry, the validator
        task = await ws.store.get_task(task_id)
        assert task.status is TaskStatus.NEEDS_REVIEW  # never awaiting_feedback, though "accepted"
        attempt = (await ws.store.list_attempts(task_id))[0]
        assert attempt.finish_reason == FinishReason.TRUNCATED
        assert attempt.final_output == "The Mariana Trench is about 10,935 metres"
        responses = await _events(ws, task_id, EventKind.LLM_RESPONSE_RECEIVED)
        assert responses[-1].payload["finish_reason"] == "stream_cut"  # never a guessed "stop"
        changes = await _events(ws, task_id, EventKind.TASK_STATUS_CHANGED)
        assert "stream ended before the server said it was finished" in changes[-1].payload["reason"]
        validation = (await ws.store.list_validations(task_id))[0]
        warnings = [w for w in read_warnings(validation.debug) if w.code is WarningCode.TRUNCATED_ANSWER]
        assert warnings and "stream ended" in warnings[0].message
    finally:
        await ws.close()
