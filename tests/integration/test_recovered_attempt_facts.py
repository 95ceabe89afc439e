"""A runner killed while validating: recovery records the attempt's end, and every reader agrees.

``show --json``, the audit report and an exported bundle's report all read the same dossier, so
the outcome they print for the interrupted attempt is the one recovery wrote, not a guess.
"""

from __future__ import annotations

import signal
import sqlite3

import pytest

from tests import zygote
from tests.core.test_report_dossier import report_facts
from tests.integration.conftest import Desk, verdict
from tests.integration.test_crash_recovery import _wait_for
from tests.zygote import ZygoteProcess


@pytest.mark.slow
def test_killed_during_validation_every_reader_shows_the_recorded_outcome(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides are caused mainly by the Moon's gravity."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9), "delay_s": 120}]},
        ]
    )
    cmd, env = desk.child("run", "What causes tides?")
    with zygote.spawn(cmd, env, stdout=zygote.PIPE, stderr=zygote.PIPE) as proc:
        _kill_when_validating(desk, proc)

    [task] = desk.cli_json("list")  # the next start recovers it
    assert (task["status"], task["validation_outcome"]) == ("needs_review", "force_accepted")
    shown = desk.cli_json("show", task["id"])
    [attempt] = shown["attempts"]
    assert (attempt["state"], attempt["validation_outcome"]) == ("interrupted", "force_accepted")
    assert attempt["finish_reason"] == "stop"  # the run itself had ended; validation was cut off

    report = desk.root / "report.html"
    assert desk.cli("report", task["id"], "-o", str(report))[0] == 0
    bundle = desk.root / "case.zip"
    assert desk.cli("export", task["id"], "-o", str(bundle))[0] == 0
    from_bundle = desk.root / "bundle-report.html"
    assert desk.cli("report", task["id"], "-o", str(from_bundle), "--bundle", str(bundle))[0] == 0
    expected = {1: ("interrupted", "force_accepted")}
    assert report_facts(report.read_text(encoding="utf-8")) == expected
    assert report_facts(from_bundle.read_text(encoding="utf-8")) == expected


def _kill_when_validating(desk: Desk, proc: ZygoteProcess) -> None:
    try:

        def validating() -> bool:
            try:
                return desk.db.exists() and desk.rows("select status from tasks") == [("validating",)]
            except sqlite3.OperationalError:
                return False

        _wait_for(validating)
        # What the killed runner leaves: an attempt still running, with no outcome recorded.
        assert desk.rows("select state, validation_outcome from attempts") == [("running", None)]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
