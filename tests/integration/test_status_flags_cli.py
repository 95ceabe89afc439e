"""A failed task is open and says so (issue 32): its flags agree with what it accepts.

``failed`` used to say it was not open while ``feedback <failed> revise`` started a new attempt.
Now ``show`` prints the flags from the one table beside the actions the transition table allows,
and they agree at every step: failed (open, waits for the analyst, revise or abandon), a revision
under way again, abandoned (not open, terminal, nothing but reopen).
"""

from __future__ import annotations

from tests.integration.conftest import Desk, verdict


def test_a_failed_task_is_open_accepts_a_revision_and_an_abandoned_one_is_not(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "match": "Use the corpus", "turns": [{"content": "The Moon's gravity."}]},
            {"model": "agent", "turns": [{"error": "bad_request"}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    code, _, err = desk.cli("run", "What causes tides?")
    assert code == 5, err
    [task] = desk.cli_json("list")
    shown = desk.cli_json("show", task["id"])["task"]
    assert shown["status"] == "failed"
    assert shown["flags"] == {
        "is_open": True,
        "is_execution_active": False,
        "requires_user_action": True,
        "is_terminal": False,
    }
    assert shown["allowed_actions"] == ["abandon", "revise"]

    revised = desk.cli_json("feedback", task["id"], "revise", "--prompt", "Use the corpus.")
    assert revised["status"] == "awaiting_feedback" and len(revised["attempts"]) == 2

    desk.cli_json("feedback", task["id"], "abandon")
    shown = desk.cli_json("show", task["id"])["task"]
    assert shown["flags"]["is_open"] is False and shown["flags"]["is_terminal"] is True
    assert shown["allowed_actions"] == []
    before = desk.dump()
    code, _, err = desk.cli("feedback", task["id"], "revise", "--prompt", "Again.")
    assert code == 3 and "abandoned" in err  # refused, in one line, nothing changed
    assert desk.dump() == before
