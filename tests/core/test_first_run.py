"""The first run: with no provider, the replay model answers any task offline and nothing fails;
a configuration that cannot run is refused before a task is written (core and CLI)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from core.config import load_settings
from core.domain import FeedbackAction, TaskStatus
from core.errors import ConfigurationError
from core.first_run import REPLAY_ANSWER, needs_provider, replay_notice, replay_roles, with_replay_model
from core.profiles import ModelProfile, ModelRole
from core.tasks.review import ReviewService
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.fakes.llm_server import FakeLLMServer, Reply

pytestmark = pytest.mark.empty_workspace  # a fresh install: the workspace does not exist yet

REVIEWABLE = {TaskStatus.NEEDS_REVIEW, TaskStatus.AWAITING_FEEDBACK}


@pytest.fixture(autouse=True)
def _no_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("EVIDENCE_DESK_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(tmp_path / "absent" / "config.toml"))


async def test_replay_model_answers_any_question_and_revise_works(tmp_path: Path, sqlite_url: str) -> None:
    bare = load_settings(db_url=sqlite_url)
    assert needs_provider(bare)
    settings = with_replay_model(bare, tmp_path / "replay")
    assert not needs_provider(settings)
    ws = await Workspace.open(settings)
    try:
        service = TaskService(ws)
        task = await service.run((await service.create("What is the airspeed of a swallow?")).id)
        assert task.status in REVIEWABLE
        attempts = await ws.store.list_attempts(task.id)
        assert attempts[-1].final_output is not None and REPLAY_ANSWER in attempts[-1].final_output
        assert task.latest_validation_status == "insufficient_evidence"  # never "accepted" unjudged
        revised = await ReviewService(service).feedback(
            task.id, FeedbackAction.REVISE, expected_version=task.version, prompt="Shorter, please."
        )
        task = await service.run(revised.id)
        assert task.status in REVIEWABLE
        demo = await service.run((await service.create("What did the Antikythera mechanism compute?")).id)
        assert demo.status in REVIEWABLE  # the demo's own questions get the demo's scripted runs
        statuses = {t.status for t in await ws.store.list_tasks()}
        assert TaskStatus.FAILED not in statuses
    finally:
        await ws.close()


async def test_no_script_is_refused_before_a_task_is_written(sqlite_url: str) -> None:
    ws = await Workspace.open(load_settings(db_url=sqlite_url))
    try:
        with pytest.raises(ConfigurationError, match="needs a script: set EVIDENCE_DESK_SCRIPT or --script"):
            await TaskService(ws).create("What causes tides?")
        assert await ws.store.list_tasks() == []
    finally:
        await ws.close()


def test_cli_run_on_a_fresh_install_answers_with_the_replay_model_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fresh HOME, the default workspace path, no --db: the first ``run`` answers offline."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg in ("DATA", "CONFIG", "CACHE", "STATE"):
        monkeypatch.setenv(f"XDG_{xdg}_HOME", str(tmp_path / xdg.lower()))
    code = cli_main(["run", "What causes tides?", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err and "needs a script" not in captured.err
    notices = [line for line in captured.err.splitlines() if "offline replay model" in line]
    assert len(notices) == 1 and "no model provider is configured" in notices[0]
    task = json.loads(captured.out)
    assert task["status"] in {s.value for s in REVIEWABLE}
    workspace = tmp_path / "data" / "evidence-desk" / "workspace.sqlite3"
    assert workspace.is_file()  # the default workspace, not a temporary one
    assert cli_main(["show", task["id"], "--json"]) == 0
    assert REPLAY_ANSWER in capsys.readouterr().out


async def test_a_profile_for_the_agent_alone_leaves_no_role_without_a_model(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeLLMServer
) -> None:
    """Issue 30: the agent on a local server, nothing else configured. The validator and the
    planner stay on their scripted defaults with no script; the replay model stands in for them
    (and only them), so New task runs, and its verdict says nobody judged it."""
    fake_llm.push(Reply.text("Whales sing for up to twenty hours."))
    agent = ModelProfile(model="openai/fake-model", api_base=fake_llm.openai_base, no_api_key=True)
    configured = load_settings(db_url=sqlite_url, stream_agent=False).with_profiles({ModelRole.AGENT: agent})
    assert replay_roles(configured) == [ModelRole.VALIDATOR, ModelRole.PLANNER]
    assert not needs_provider(configured)  # the agent is served: no first-run banner
    assert "validator, planner" in replay_notice(replay_roles(configured))
    settings = with_replay_model(configured, tmp_path / "replay")
    assert settings.agent_model == "openai/fake-model" and settings.corpus is None
    script = json.loads(Path(str(settings.script)).read_text(encoding="utf-8"))
    assert {c["model"] for c in script["conversations"]} == {"validator", "planner"}
    assert all("match" not in c for c in script["conversations"])  # no demo verdict for a real answer
    ws = await Workspace.open(settings)
    try:
        service = TaskService(ws)
        task = await service.run((await service.create("Which whale sings the longest song?")).id)
        assert task.status is TaskStatus.NEEDS_REVIEW
        attempt = (await ws.store.list_attempts(task.id))[-1]
        assert attempt.final_output == "Whales sing for up to twenty hours."
        assert task.latest_validation_status == "insufficient_evidence"  # never "accepted" unjudged
        assert [r.body["model"] for r in fake_llm.chat_requests()] == ["fake-model"]
    finally:
        await ws.close()


def test_cli_run_with_only_the_agent_configured_says_what_stands_in(
    sqlite_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_llm: FakeLLMServer,
) -> None:
    """The CLI's side of issue 30's dead end: a configured agent and nothing else used to exit with
    "model scripted/validator needs a script"."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("EVIDENCE_DESK_AGENT_MODEL", "openai/fake-model")
    monkeypatch.setenv("EVIDENCE_DESK_API_BASE", fake_llm.openai_base)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-placeholder")
    fake_llm.push(Reply.text("Whales sing for up to twenty hours."))
    code = cli_main(["run", "Which whale sings the longest song?", "--db", sqlite_url, "--create", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "needs a script" not in captured.err
    notices = [line for line in captured.err.splitlines() if "offline replay model" in line]
    assert len(notices) == 1 and "no model is configured for validator, planner" in notices[0]
    assert json.loads(captured.out)["status"] == TaskStatus.NEEDS_REVIEW.value
    assert len(fake_llm.chat_requests()) == 1
