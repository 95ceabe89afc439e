"""A run killed with SIGKILL mid-flight is recovered at the next start, evidence intact."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time

import pytest

from tests import zygote
from tests.integration.conftest import Desk


def _wait_for(predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)  # polling another process's database; no event loop here
    raise AssertionError("condition not reached in time")


@pytest.mark.slow
def test_sigkilled_run_is_recovered_with_evidence(desk: Desk) -> None:
    desk.script(
        [
            {
                "model": "agent",
                "turns": [
                    {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides"}}]},
                    {"content": "never delivered", "delay_s": 3600},
                ],
            }
        ]
    )
    cmd, env = desk.child("run", "What causes tides?")

    def tool_result_committed() -> bool:
        if not desk.db.exists():
            return False
        try:
            rows = desk.rows("select count(*) from events where kind = 'tool_result_recorded'")
        except sqlite3.OperationalError:
            return False
        return rows[0][0] >= 1

    # The context manager closes the child's pipes and reaps it, whatever happens.
    with zygote.spawn(cmd, env, stdout=zygote.DEVNULL, stderr=zygote.DEVNULL) as proc:
        try:
            _wait_for(tool_result_committed)
            assert desk.rows("select status from tasks") == [("running",)]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    listed = desk.cli_json("list")  # any start recovers interrupted work
    assert [t["status"] for t in listed] == ["failed"]
    shown = desk.cli_json("show", listed[0]["id"])
    kinds = [e["kind"] for e in shown["events"]]
    assert "task_interrupted" in kinds and "run_interrupted" in kinds
    tool = next(e for e in shown["events"] if e["kind"] == "tool_result_recorded")
    assert "Moon" in tool["content"]
    assert shown["attempts"][0]["state"] == "interrupted"
    with sqlite3.connect(desk.db) as conn:
        assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
    assert json.loads(json.dumps(shown))  # the dossier stays readable


def test_live_runner_is_not_taken_over(desk: Desk) -> None:
    """A task another live process is running must not be 'recovered' under its feet."""
    desk.script([{"model": "agent", "turns": [{"content": "x"}]}])
    desk.cli_json("list")  # creates the workspace
    with sqlite3.connect(desk.db) as conn:
        conn.execute(
            "insert into tasks (id, title, text, status, attempt_count, read_only, version, created_at, updated_at,"
            " runner) values ('t1', 't', 't', 'running', 1, 0, 1, datetime('now'), datetime('now'), ?)",
            (f"{os.uname().nodename}:{os.getppid()}",),
        )
    assert [t["status"] for t in desk.cli_json("list")] == ["running"]


def test_unexpected_errors_are_one_line(desk: Desk) -> None:
    """A row this version cannot read (here: a status it does not know) is a bug report, in one line."""
    desk.script([{"model": "agent", "turns": [{"content": "x"}]}])
    desk.cli_json("list")  # creates the workspace
    with sqlite3.connect(desk.db) as conn:
        conn.execute(
            "insert into tasks (id, title, text, status, attempt_count, read_only, version, created_at,"
            " updated_at) values ('t1', 't', 't', 'no-such-status', 0, 0, 1, datetime('now'), datetime('now'))"
        )
    code, _, err = desk.cli("list")
    assert code == 1 and err.count("\n") == 1, err
    assert "internal error: ValidationError:" in err and "no-such-status" in err
