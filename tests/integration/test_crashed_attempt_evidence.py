"""Evidence an attempt recorded before its process was SIGKILLed stays its own (issue 32, seed 002).

Seed 002 has the validator see the evidence of every attempt. An attempt that a crash ended never
reached the point where its packet is written, so before issue 32 its tool results were in the
history but in no packet: a revision's validator said "No evidence was gathered in any attempt".
Crash recovery now closes the attempt with the packet its recorded events make, under the ids the
task numbers by, and every later validation carries it.
"""

from __future__ import annotations

import signal
import sqlite3

import pytest

from tests import zygote
from tests.integration.conftest import Desk, verdict
from tests.integration.test_crash_recovery import _wait_for

ANSWER = "Tides are caused mainly by the Moon's gravity."
SEARCH = {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides"}}]}


@pytest.mark.slow
def test_revision_after_a_crash_is_judged_on_the_crashed_attempts_evidence(desk: Desk) -> None:
    desk.script(
        [
            # The revision's request holds one assistant message (attempt 1's search call): its
            # turn 1 answers from the evidence. Attempt 1 hangs on its answer until it is killed.
            {"model": "agent", "match": "Answer from what you found", "turns": [SEARCH, {"content": ANSWER}]},
            {"model": "agent", "turns": [SEARCH, {"content": "never delivered", "delay_s": 3600}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    cmd, env = desk.child("run", "What causes tides?")

    def tool_result_committed() -> bool:
        try:
            found = desk.db.exists() and desk.rows(
                "select count(*) from events where kind = 'tool_result_recorded'"
            )
        except sqlite3.OperationalError:  # the child is still creating the workspace
            return False
        return bool(found) and found[0][0] >= 1

    with zygote.spawn(cmd, env, stdout=zygote.DEVNULL, stderr=zygote.DEVNULL) as proc:
        try:
            _wait_for(tool_result_committed)  # the database says so: no sleep stands in for it
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    code, _, err = desk.cli("recover")
    assert code == 0, err
    [task] = desk.cli_json("list")
    assert task["status"] == "failed"  # no answer: the crashed attempt had none

    # The crashed attempt is closed with its evidence, numbered from E1.
    shown = desk.cli_json("show", task["id"])
    [crashed] = shown["attempts"]
    assert crashed["state"] == "interrupted"
    assert crashed["packet"] is not None and crashed["packet"]["evidence_id_start"] == 1
    [tool] = crashed["packet"]["main_run"]["tool_results"]
    assert "Moon's gravity" in tool["content"]

    revised = desk.cli_json("feedback", task["id"], "revise", "--prompt", "Answer from what you found.")
    assert revised["status"] == "awaiting_feedback"
    shown = desk.cli_json("show", task["id"])
    [validation] = shown["validations"]  # attempt 1 never reached its validator
    prompt = str(validation["prompt"] or "")
    assert "No evidence was gathered" not in prompt
    assert "[E1] tool result: main run / search_corpus" in prompt
    evidence = prompt.split("## Recent conversation history")[0]
    assert "Moon" in evidence.split("[E1]")[1], evidence
    assert validation["debug"]["tool_result_count"] >= 1
    assert validation["debug"]["evidence_attempts"] == [1, 2]
