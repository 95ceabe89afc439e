"""The summary a stopped worker prints: counts per status, and each failure with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import core.workers.worker as worker_module
from core.cli.main import main as cli_main
from core.workers.worker import WorkerStats
from tests.team.conftest import VERDICT_OK


def _queue(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, list[str]]:
    script = tmp_path / "script.json"
    conversations = [
        {"model": "agent", "match": "Broken", "turns": [{"error": "bad_request"}]},
        {"model": "agent", "turns": [{"content": "The answer is done."}]},
        {"model": "validator", "turns": [{"content": VERDICT_OK}]},
    ]
    script.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    rows = tmp_path / "rows.jsonl"
    texts = ["Fine question 1?", "Broken question?", "Fine question 2?"]
    rows.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    capsys.readouterr()
    assert cli_main(["batch", str(rows), "--db", db_url, "--create", "--script", str(script), "--json"]) == 0
    return script, list(json.loads(capsys.readouterr().out)["task_ids"])


def test_the_summary_lists_counts_per_status_and_failures_with_reasons(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVIDENCE_DESK_LLM_NUM_RETRIES", "0")
    script, ids = _queue(sqlite_url, tmp_path, capsys)
    code = cli_main(["worker", "--db", sqlite_url, "--script", str(script), "--once", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert summary["finished"] == {"awaiting_feedback": 2, "failed": 1}
    (failure,) = summary["failures"]
    assert failure["task_id"] == ids[1] and failure["outcome"] == "failed"
    assert "no usable answer" in failure["reason"] and "llm_error" in failure["reason"]


def test_on_a_terminal_the_summary_is_one_line_of_counts_then_one_line_per_failure(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVIDENCE_DESK_LLM_NUM_RETRIES", "0")
    script, ids = _queue(sqlite_url, tmp_path, capsys)
    code = cli_main(["worker", "--db", sqlite_url, "--script", str(script), "--once"])
    err = capsys.readouterr().err
    assert code == 0
    start = next(i for i, line in enumerate(err.splitlines()) if line.startswith("worker stopped"))
    summary = err.splitlines()[start:]
    assert "3 task(s) run (2 awaiting_feedback, 1 failed)" in summary[0]
    assert summary[1].split()[:2] == [ids[1][:12], "failed:"]
    assert "no usable answer (llm_error)" in summary[1]
    assert len(summary) == 2


def test_a_long_running_worker_holds_only_its_latest_failures_and_counts_them_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker runs for weeks: its summary must not keep every failure it ever met in memory."""
    monkeypatch.setattr(worker_module, "FAILURES_KEPT", 30)
    stats = WorkerStats()
    for n in range(45):
        stats.failed(f"{n:032d}", "failed", f"reason {n}")
    assert stats.failure_count == 45 and len(stats.failures) == 30
    assert stats.failures[0][2] == "reason 15"  # the oldest dropped first
    lines = stats.summary().splitlines()
    assert [line.split(": ")[-1] for line in lines[1:21]] == [f"reason {n}" for n in range(25, 45)]
    assert lines[21].startswith("  ... and 25 more before these")
    as_json = stats.as_json()
    assert as_json["failure_count"] == 45 and len(as_json["failures"]) == 30
