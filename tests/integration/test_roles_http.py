"""Profiles by role (issue 28, item 4): every call uses its role's profile, whatever the model names.

Three loopback fakes (tests/fakes/llm_server.py) stand for three endpoints. The agent, the planner
and the validator all name the *same* model, so looking a profile up by model name would send
every call to the agent's endpoint with the agent's window: each server must see only its role's
requests, and the validator must size its prompt by its own ``context_window``.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from core.config import load_settings
from core.domain import TaskStatus
from core.domain.facts import WarningCode
from core.llm import LLMGateway
from core.profiles import ModelProfile, ModelRole
from core.tasks.service import TaskService
from core.validation.warnings import read_warnings
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

MODEL = "openai/shared-model"  # one name for every role
ROOT = Path(__file__).resolve().parents[2]
FACT = "Tides are caused mainly by the Moon's gravity. " + "Coasts see two high tides a day. " * 300
PLAN = {
    "mode": "sequence",
    "nodes": [{"id": "reader", "role": "Reads the corpus", "task": "Find what causes tides", "tools": []}],
}


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EVIDENCE_DESK_") or name.endswith("_API_BASE") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/config.toml")


def _verdict(request: RecordedRequest) -> Reply:
    """The validator's server: chunk findings for a chunk, an acceptance citing E1 for the verdict."""
    if "Findings from the evidence chunks" in request.text or "findings" not in request.text:
        cited = [{"claim": "cause", "evidence_id": "E1", "quote": "Moon's gravity", "verdict": "supported"}]
        return Reply.structured(
            {
                "goal_achievement": "answers the question",
                "completeness": "complete",
                "rule_compliance": "no rules",
                "status": "accepted",
                "score": 0.9,
                "citations": cited,
            }
        )
    return Reply.structured({"findings": [], "notes": "nothing contradicts the answer"})


async def test_planner_agent_and_validator_naming_one_model_use_their_own_endpoints(
    fake_llm_factory: Callable[..., FakeLLMServer], sqlite_url: str, tmp_path: Path
) -> None:
    agent, planner, validator = (fake_llm_factory(models=["shared-model"]) for _ in range(3))
    planner.push(Reply.structured(PLAN))
    agent.push(Reply.text("Notes: " + FACT), Reply.text("The Moon's gravity causes the tides."))
    validator.responder = _verdict

    def profile(server: FakeLLMServer, window: int) -> ModelProfile:
        return ModelProfile(api_base=server.openai_base, no_api_key=True, context_window=window)

    settings = load_settings(
        db_url=sqlite_url,
        agent_model=MODEL,
        planner_model=MODEL,
        validator_model=MODEL,
        max_validation_attempts=1,
        llm_num_retries=0,
        profiles={
            ModelRole.AGENT: profile(agent, 100_000),
            ModelRole.PLANNER: profile(planner, 100_000),
            ModelRole.VALIDATOR: profile(validator, 2_000),  # far smaller than the agent's
        },
    )
    ws = await Workspace.open(settings, gateway=LLMGateway(settings, retry_backoff_s=0.0))
    try:
        service = TaskService(ws)
        task = await service.run((await service.create("What causes tides?", team="auto")).id)
        assert task.status is TaskStatus.AWAITING_FEEDBACK
        (planned,) = planner.chat_requests()
        assert "plan a small team" in planned.text  # the planner's request reached the planner's server
        assert len(agent.chat_requests()) == 2  # the node and the synthesis, nothing else
        assert all("plan a small team" not in r.text for r in agent.chat_requests())
        judged = validator.chat_requests()
        assert judged and all("What causes tides?" in r.text for r in judged)
        (validation,) = await ws.store.list_validations(task.id)
        # The validator's 2,000-token window, not the agent's 100,000: the evidence went in chunks.
        assert validation.debug["strategy"] == "chunked" and validation.debug["chunk_count"] >= 2
        assert WarningCode.UNKNOWN_CONTEXT_WINDOW not in [w.code for w in read_warnings(validation.debug)]
        assert validation.result["status"] == "accepted"
    finally:
        await ws.close()


_CALLS = {"complete", "complete_structured"}


def test_every_model_call_in_core_names_its_role() -> None:
    """A call that names no role falls back to matching its model name: no production call may."""
    missing = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in _CALLS and not any(k.arg == "role" for k in node.keywords):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert missing == [], json.dumps(missing)
