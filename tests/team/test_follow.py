"""``run`` and ``feedback revise`` with the team's workers: they say the work was queued and how to
follow it, and ``--wait`` waits for the resting status a worker brings the task to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from tests.team.conftest import worker_process, write_script
from tests.zygote import ZygoteProcess


@pytest.mark.slow
def test_run_queued_for_the_workers_says_so_and_waits_with_wait(
    pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    processes: list[ZygoteProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = write_script(tmp_path / "script.json")
    monkeypatch.setenv("EVIDENCE_DESK_DEFER_RUNS", "true")  # queued whether or not a worker is up yet
    base = ["--db", pg_url, "--script", str(script)]
    capsys.readouterr()
    assert cli_main(["run", "Queued, not waited for?", *base]) == 0
    err = capsys.readouterr().err
    assert "queued for the team's workers" in err and "evidence-desk show" in err and "--wait" in err
    processes.append(worker_process(pg_url, script, "--poll", "0.5", "--heartbeat", "0.5"))
    assert cli_main(["run", "Waited for?", *base, "--wait", "--json"]) == 0
    waited = json.loads(capsys.readouterr().out)
    assert waited["status"] == "awaiting_feedback" and len(waited["attempts"]) == 1
    revise = ["feedback", waited["id"], "revise", "--prompt", "Say more.", *base, "--wait", "--json"]
    assert cli_main(revise) == 0
    revised = json.loads(capsys.readouterr().out)
    assert revised["status"] == "awaiting_feedback" and len(revised["attempts"]) == 2
