"""``undo`` by one reviewer never silently reverses another reviewer's decision."""

from __future__ import annotations

from tests.integration.conftest import Desk, verdict


def test_undo_refuses_another_reviewers_decision_unless_taken_over(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides follow the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task_id = str(desk.cli_json("run", "Tides?")["id"])
    desk.env(reviewer="alice")
    code, _, err = desk.cli("feedback", task_id, "satisfied")
    assert code == 0, err
    desk.env(reviewer="bob")
    before = desk.dump()
    code, _, err = desk.cli("undo", task_id)
    assert code == 3 and "was alice's, not bob's" in err and "--take-over" in err, err
    assert desk.dump() == before
    code, out, err = desk.cli("undo", task_id, "--take-over")
    assert code == 0 and "awaiting_feedback" in out, err
    desk.env(reviewer="alice")
    code, _, err = desk.cli("feedback", task_id, "satisfied")
    assert code == 0, err
    code, _, err = desk.cli("undo", task_id)  # one's own decision needs nothing more
    assert code == 0, err
