"""``run`` tells the truth about a task that failed at the provider, over real HTTP to a loopback fake."""

from __future__ import annotations

import json

import pytest

from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.integration.conftest import Desk, verdict


@pytest.fixture
def provider_desk(desk: Desk, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Desk:
    monkeypatch.setenv("OPENAI_API_BASE", fake_llm.openai_base)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-key")
    desk.env(agent_model="openai/fake-agent", validator_model="openai/fake-validator")
    desk.script([{"model": "unused", "turns": [{"content": "unused"}]}])  # --script is always passed; unused
    return desk


def test_run_prints_the_failure_and_exits_5(provider_desk: Desk, fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Reply.empty_choices())
    code, out, err = provider_desk.cli("run", "How deep is the Mariana Trench?")
    assert code == 5
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "failed:" in line]
    assert len(lines) == 1 and "reply had no choices" in lines[0] and "openai/fake-agent" in lines[0]
    assert "status failed" in out
    task_id = lines[0].split()[2]
    code, shown, _ = provider_desk.cli("show", task_id)
    assert code == 0 and "reply had no choices" in shown


def test_run_json_carries_error_tokens_and_cost(provider_desk: Desk, fake_llm: FakeLLMServer) -> None:
    fake_llm.push(Reply.malformed())
    code, out, err = provider_desk.cli("run", "A question?", "--json")
    assert code == 5
    data = json.loads(out)
    assert data["status"] == "failed"
    assert "could not be read" in data["error"] and "cannot reach" not in data["error"]
    assert data["tokens"] == {"prompt": 0, "completion": 0, "total": 0}
    assert "cost_usd" in data
    assert "could not be read" in err


def test_run_json_counts_tokens_of_a_good_run(provider_desk: Desk, fake_llm: FakeLLMServer) -> None:
    fake_llm.push(
        Reply.text("About 10,935 metres.", prompt_tokens=100, completion_tokens=20),
        Reply(kind="message", content=verdict("accepted", 0.9), prompt_tokens=300, completion_tokens=40),
    )
    code, out, err = provider_desk.cli("run", "How deep?", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "awaiting_feedback" and data["error"] is None
    assert data["tokens"] == {"prompt": 400, "completion": 60, "total": 460}
