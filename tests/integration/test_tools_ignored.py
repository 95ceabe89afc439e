"""Tools the server ignores (issue 28, item 7): a run offered tools and a corpus that called none is marked.

A llama.cpp server whose chat template has no tools answers every request in plain text; the
agent then writes an answer from the model's memory. The loopback fake (tests/fakes/llm_server.py)
plays that server over litellm's real HTTP path.
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
from core.config import load_settings
from core.domain.facts import EventKind
from core.llm import LLMGateway
from core.profiles import ModelProfile, ModelRole
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, Reply

VERDICT = {
    "goal_achievement": "gives the depth",
    "completeness": "complete",
    "rule_compliance": "no rules",
    "status": "rejected",
    "score": 0.2,
}


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EVIDENCE_DESK_") or name.endswith("_API_BASE") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", "/nonexistent/config.toml")


def _run(server: FakeLLMServer, tmp_path: Path, *, corpus: bool) -> tuple[str, Path, list[dict[str, Any]]]:
    folder = tmp_path / "corpus"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trench.md").write_text("The Challenger Deep is 10,935 metres deep.\n", encoding="utf-8")
    db = tmp_path / "ws.sqlite3"
    profile = ModelProfile(api_base=server.openai_base, no_api_key=True, context_window=32_000)
    settings = load_settings(
        db_url=f"sqlite+aiosqlite:///{db}",
        corpus=folder if corpus else None,
        agent_model="openai/fake-agent",
        validator_model="openai/fake-validator",
        max_validation_attempts=1,
        llm_num_retries=0,
        profiles={ModelRole.AGENT: profile, ModelRole.VALIDATOR: profile},
    )

    async def go() -> tuple[str, list[dict[str, Any]]]:
        ws = await Workspace.open(settings, gateway=LLMGateway(settings, retry_backoff_s=0.0))
        try:
            service = TaskService(ws)
            task = await service.run((await service.create("How deep is the Challenger Deep?")).id)
            events = await ws.store.get_task_events(task.id, kinds=[EventKind.RUN_FINISHED])
            return task.id, [e.payload for e in events]
        finally:
            await ws.close()

    task_id, ends = asyncio.run(go())
    return task_id, db, ends


def test_an_answer_that_searched_nothing_is_marked(
    fake_llm_factory: Callable[..., FakeLLMServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = fake_llm_factory()
    server.push(Reply.text("About 11,000 metres, from memory."), Reply.structured(VERDICT))
    task_id, db, (end,) = _run(server, tmp_path, corpus=True)
    assert (server.chat_requests()[0].body or {}).get("tools")  # tools were offered
    assert end["tools_ignored"] is True and any(w.startswith("tools-ignored:") for w in end["warnings"])
    capsys.readouterr()
    assert cli_main(["show", task_id, "--db", str(db)]) == 0
    assert "warning: tools-ignored: the model was offered tools" in capsys.readouterr().out
    capsys.readouterr()
    assert cli_main(["show", task_id, "--json", "--db", str(db)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["attempts"][0]["packet"]["main_run"]["tools_ignored"] is True


def test_a_run_that_searched_or_had_nothing_to_search_is_not_marked(
    fake_llm_factory: Callable[..., FakeLLMServer], tmp_path: Path
) -> None:
    searched = fake_llm_factory()
    searched.push(
        Reply.tools(("search_corpus", {"query": "Challenger Deep"})),
        Reply.text("About 10,935 metres."),
        Reply.structured(VERDICT),
    )
    _, _, (end,) = _run(searched, tmp_path / "searched", corpus=True)
    assert "tools_ignored" not in end
    no_corpus = fake_llm_factory()
    no_corpus.push(Reply.text("About 11,000 metres."), Reply.structured(VERDICT))
    _, _, (end,) = _run(no_corpus, tmp_path / "no-corpus", corpus=False)
    assert "tools_ignored" not in end and not any(w.startswith("tools-ignored") for w in end["warnings"])
