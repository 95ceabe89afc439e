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
from core.first_run import REPLAY_ANSWER, needs_provider, with_replay_model
from core.tasks.review import ReviewService
from core.tasks.service import TaskService
from core.workspace import Workspace

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
