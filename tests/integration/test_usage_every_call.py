"""Every answered call is counted once (issue 28, item 5), over litellm's real HTTP path.

Loopback fakes (tests/fakes/llm_server.py) answer each call with 11 prompt and 7 completion tokens,
so the expected totals are the number of answered requests the servers saw times those figures:
the planner's call, a turn cut off at ``max_tokens`` and retried, an output schema's re-ask, and
the calls of a validation whose budget ran out all count, in ``show``, ``run --json`` and the report.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.cli.main import main as cli_main
from core.cli.run import run_outcome
from core.config import Settings, load_settings
from core.domain import TaskStatus
from core.llm import LLMGateway
from core.profiles import ModelProfile, ModelRole
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, Reply

PER_CALL = 11 + 7
PRICE_IN, PRICE_OUT = 1.0, 2.0  # USD per million tokens
COST_PER_CALL = (11 * PRICE_IN + 7 * PRICE_OUT) / 1_000_000
SCHEMA = {"type": "object", "properties": {"depth_m": {"type": "integer"}}, "required": ["depth_m"]}
PLAN = {
    "mode": "sequence",
    "nodes": [{"id": "reader", "role": "Reads", "task": "Find the depth", "tools": ["search_corpus"]}],
}
CITED = [{"claim": "depth", "evidence_id": "E1", "quote": "10,935", "verdict": "supported"}]


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EVIDENCE_DESK_") or name.endswith("_API_BASE") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/config.toml")


def _settings(db: Path, corpus: Path, servers: dict[ModelRole, FakeLLMServer], **extra: Any) -> Settings:
    return load_settings(
        db_url=f"sqlite+aiosqlite:///{db}",
        corpus=corpus,
        agent_model="openai/fake-agent",
        planner_model="openai/fake-planner",
        validator_model="openai/fake-validator",
        max_validation_attempts=1,
        llm_num_retries=0,
        max_schema_retries=1,
        profiles={
            role: ModelProfile(api_base=server.openai_base, no_api_key=True, context_window=32_000)
            for role, server in servers.items()
        },
        **extra,
    )


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "trench.md").write_text("The Challenger Deep is 10,935 metres deep.\n", encoding="utf-8")
    return corpus


def _answered(*servers: FakeLLMServer) -> int:
    """Chat requests the servers answered (every one here but the held reply, which never returns)."""
    return sum(len(s.chat_requests()) for s in servers)


async def _run(settings: Settings, **create: Any) -> tuple[Any, dict[str, Any]]:
    """One task through the service, and ``run --json``'s figures for it."""
    ws = await Workspace.open(settings, gateway=LLMGateway(settings, retry_backoff_s=0.0))
    try:
        service = TaskService(ws)
        task = await service.run((await service.create("How deep?", **create)).id)
        return task, await run_outcome(ws.store, task)
    finally:
        await ws.close()


def _cli_json(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> Any:
    capsys.readouterr()
    assert cli_main([*args, "--json", "--db", str(db)]) == 0
    return json.loads(capsys.readouterr().out)


def test_cut_turn_schema_reask_and_a_timed_out_validation_all_count(
    fake_llm_factory: Callable[..., FakeLLMServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, validator = fake_llm_factory(), fake_llm_factory()
    agent.push(
        Reply.tools(("search_corpus", {"query": "Challenger De"}), finish_reason="length"),  # cut, retried
        Reply.tools(("search_corpus", {"query": "Challenger Deep depth"})),
        Reply.text("It is about 10,935 metres deep."),  # not the schema's JSON
        Reply.text('{"depth_m": 10935}'),  # the re-ask's answer
    )
    validator.push(Reply.text("I think it is fine."), Reply.held())  # a re-ask that never comes back
    db = tmp_path / "ws.sqlite3"
    settings = _settings(
        db,
        _corpus(tmp_path),
        {ModelRole.AGENT: agent, ModelRole.VALIDATOR: validator},
        validator_budget_s=1.0,
        llm_cost_per_mtok_in=PRICE_IN,
        llm_cost_per_mtok_out=PRICE_OUT,
    )
    task, outcome = asyncio.run(_run(settings, output_schema=SCHEMA))
    assert task.status is TaskStatus.NEEDS_REVIEW  # validator error: the budget ran out
    answered = _answered(agent) + 1  # the validator's first reply; its second never came back
    assert (len(agent.chat_requests()), len(validator.chat_requests())) == (4, 2)
    assert outcome["calls"] == answered
    assert outcome["tokens"]["total"] == answered * PER_CALL
    assert outcome["cost_usd"] == pytest.approx(answered * COST_PER_CALL)
    shown = _cli_json(capsys, db, "show", task.id)
    assert shown["usage"]["calls"] == answered
    assert shown["usage"]["prompt_tokens"] == answered * 11
    assert shown["usage"]["cost_usd"] == pytest.approx(answered * COST_PER_CALL)
    assert [a["usage"]["calls"] for a in shown["attempts"]] == [answered]
    (validation,) = shown["validations"]
    assert validation["debug"]["llm_calls"] == 1 and "validator_budget_s" in validation["debug"]["error"]
    report = tmp_path / "report.html"
    capsys.readouterr()
    assert cli_main(["report", task.id, "-o", str(report), "--db", str(db)]) == 0
    assert f"over {answered} call(s)" in report.read_text(encoding="utf-8")


def test_the_planner_s_call_counts_in_the_attempt(
    fake_llm_factory: Callable[..., FakeLLMServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, planner, validator = fake_llm_factory(), fake_llm_factory(), fake_llm_factory()
    planner.push(Reply.structured(PLAN))
    agent.push(
        Reply.tools(("search_corpus", {"query": "Challenger Deep"})),
        Reply.text("The corpus says 10,935 metres."),
        Reply.text("About 10,935 metres."),  # the synthesis
    )
    verdict = {
        "goal_achievement": "gives the depth",
        "completeness": "complete",
        "rule_compliance": "no rules",
        "status": "accepted",
        "score": 0.9,
        "citations": CITED,
    }
    # The node's own verdict (verify_team_nodes, issue 32), then the task's: both are calls it counts.
    validator.push(Reply.structured(verdict), Reply.structured(verdict))
    db = tmp_path / "ws.sqlite3"
    servers = {ModelRole.AGENT: agent, ModelRole.PLANNER: planner, ModelRole.VALIDATOR: validator}
    settings = _settings(db, _corpus(tmp_path), servers)  # no price set: these models have none
    task, outcome = asyncio.run(_run(settings, team="auto"))
    assert task.status is TaskStatus.AWAITING_FEEDBACK
    answered = _answered(agent, planner, validator)
    assert answered == 6
    assert outcome["calls"] == answered and outcome["tokens"]["total"] == answered * PER_CALL
    assert outcome["cost_usd"] is None  # no call had a known price: unknown, not free
    shown = _cli_json(capsys, db, "show", task.id)
    assert [a["usage"]["calls"] for a in shown["attempts"]] == [answered]
    capsys.readouterr()
    assert cli_main(["show", task.id, "--db", str(db)]) == 0
    assert "· cost unknown" in capsys.readouterr().out


def test_run_json_prices_scripted_calls_at_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "script.json"
    verdict = {"goal_achievement": "g", "completeness": "c", "rule_compliance": "r", "status": "accepted"}
    conversations = [
        {"model": "agent", "turns": [{"content": "Ten thousand metres."}]},
        {"model": "validator", "turns": [{"content": json.dumps(verdict | {"score": 0.9})}]},
    ]
    script.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    db = tmp_path / "ws.sqlite3"
    capsys.readouterr()
    code = cli_main(["run", "How deep?", "--json", "--db", str(db), "--create", "--script", str(script)])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["cost_usd"] == 0.0 and result["calls"] == 2
