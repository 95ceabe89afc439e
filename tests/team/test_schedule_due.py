"""A schedule fires only when due: a worker's start-up sweep must not run a schedule's task as a
plain task (before its first due time, without its validation settings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from tests.team.conftest import sync_rows, write_script


def test_a_worker_does_not_run_a_schedule_before_it_is_due(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path / "script.json")
    base = ["--db", sqlite_url, "--script", str(script)]
    assert cli_main(["schedule", "add", "Work through the list", "--every", "3600", *base, "--create"]) == 0
    capsys.readouterr()
    assert cli_main(["worker", "--once", "--json", *base]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["finished"] == {}  # nothing was due
    assert sync_rows(sqlite_url, "select status, attempt_count from tasks") == [("open", 0)]
