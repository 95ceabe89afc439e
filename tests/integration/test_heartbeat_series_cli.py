"""A heartbeat firing never re-runs a task that waits for review (issue 32, seed 002).

Seed 002: schedulers must not treat ``needs_review`` as a reason to continue execution. The
first firing's answer waits for the analyst; the next firing starts a new task of the schedule's
series (and says so in the schedule's last verdict), leaving that answer exactly as it was.
The schedule is made due by writing its next run time, never by waiting for the clock.
"""

from __future__ import annotations

from tests.integration.conftest import Desk


def _make_due(desk: Desk) -> None:
    [(when,)] = desk.rows("select next_run_at from schedules")
    desk.rows("update schedules set next_run_at = ?", "2000" + str(when)[4:])  # same format, long past


def test_a_firing_on_a_task_waiting_for_review_starts_the_next_task_of_the_series(desk: Desk) -> None:
    checklist = desk.root / "HEARTBEAT.md"
    checklist.write_text("# HEARTBEAT.md\n- Summarise new flagged answers.\n", encoding="utf-8")
    desk.script([{"model": "agent", "turns": [{"content": "Two flagged answers, both summarised."}]}])
    added = desk.cli_json(
        "schedule", "add", "Work through HEARTBEAT.md", "--every", "3600", "--checklist", str(checklist)
    )

    _make_due(desk)
    assert desk.cli("worker", "--once")[0] == 0
    [first] = desk.cli_json("list")
    assert first["id"] == added["task_id"] and first["status"] == "needs_review" and first["attempts"] == 1
    before = desk.rows("select * from tasks where id = ?", first["id"])

    _make_due(desk)
    assert desk.cli("worker", "--once")[0] == 0
    tasks = {t["id"]: t for t in desk.cli_json("list")}
    assert len(tasks) == 2
    assert desk.rows("select * from tasks where id = ?", first["id"]) == before  # not touched at all
    [schedule] = desk.cli_json("schedule", "list")
    second = tasks[schedule["task_id"]]
    assert second["id"] != first["id"] and second["attempts"] == 1 and second["title"] == first["title"]
    assert (
        schedule["last_verdict"] == f"needs_review (not validated) (new task; {first['id'][:8]} needs_review)"
    )
    [(series,)] = desk.rows("select task_metadata from tasks where id = ?", second["id"])
    assert added["id"] in series and first["id"] in series
    shown = desk.cli_json("show", second["id"])
    assert "Summarise new flagged answers" in shown["task"]["text"]
    assert "Work through HEARTBEAT.md" in shown["task"]["text"]
