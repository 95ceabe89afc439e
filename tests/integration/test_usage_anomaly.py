"""A provider reporting impossible usage (negative tokens) over real HTTP: the reply is refused and
recorded as a provider anomaly, so a negative count cannot lower what the task has spent."""

from __future__ import annotations

import json

from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.integration.conftest import Desk


def test_negative_usage_is_refused_as_a_provider_anomaly(desk: Desk, fake_llm: FakeLLMServer) -> None:
    desk.monkeypatch.setenv("OPENAI_API_BASE", fake_llm.openai_base)
    desk.monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-key")
    desk.env(agent_model="openai/fake-agent", validator_model="openai/fake-validator", max_task_tokens=1000)
    desk.script([{"model": "unused", "turns": [{"content": "unused"}]}])
    fake_llm.push(Reply.text("Cheap answer.", prompt_tokens=-50_000, completion_tokens=10))
    code, out, err = desk.cli("run", "How deep?", "--json")
    data = json.loads(out)
    assert code == 5 and data["status"] == "failed", err
    assert "impossible usage" in data["error"] and "provider anomaly" in data["error"]
    assert data["tokens"]["prompt"] >= 0 and data["tokens"]["total"] >= 0
    assert err.count("\n") == 1
    stored = b"".join(p.read_bytes() for p in desk.db.parent.glob(desk.db.name + "*"))
    assert b"usage_anomaly" in stored  # the call is recorded with its kind of failure
