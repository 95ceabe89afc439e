"""Issue 15 through the command line: reopen, undo, a failed revision, read-only marks, the small ones."""

from __future__ import annotations

from tests.integration.conftest import Desk, verdict


def _reviewable(desk: Desk) -> dict[str, object]:
    # One agent turn: any revision is past the script's end and fails, as the demo's did.
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides come mainly from the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.93)}]},
        ]
    )
    task: dict[str, object] = desk.cli_json("run", "What causes tides?", "--title", "Tides")
    assert task["status"] == "awaiting_feedback"
    return task


def test_a_failed_revision_is_not_a_dead_end(desk: Desk) -> None:
    task = _reviewable(desk)
    revised = desk.cli_json("feedback", str(task["id"]), "revise", "--prompt", "Add the Sun.")
    assert revised["status"] == "awaiting_feedback" and revised["score"] == 0.93
    assert [a["finish_reason"] for a in revised["attempts"]] == ["stop", "llm_error"]
    assert desk.cli_json("feedback", str(task["id"]), "satisfied", "--note", "first answer is fine")[
        "status"
    ] == ("closed")


def test_reopen_and_undo_from_the_command_line(desk: Desk) -> None:
    task = _reviewable(desk)
    tid = str(task["id"])
    desk.cli_json("feedback", tid, "satisfied", "--note", "ok")
    code, _, err = desk.cli("reopen", tid)
    assert code == 2 and "--reason" in err
    reopened = desk.cli_json("reopen", tid, "--reason", "source retracted")
    assert reopened["status"] == "needs_review"
    undone = desk.cli_json("undo", tid)
    assert undone["status"] == "closed"
    before = desk.dump()
    code, _, err = desk.cli("undo", tid)
    assert code == 3 and "no decision to undo" in err and err.count("\n") == 1
    assert desk.dump() == before
    shown = desk.cli_json("show", tid)
    assert [(f["action"], f["note"]) for f in shown["feedback"]] == [
        ("satisfied", "ok"),
        ("reopen", "source retracted"),
        ("undo", None),
    ]


def test_imported_tasks_are_marked_read_only_in_list_and_show(desk: Desk) -> None:
    task = _reviewable(desk)
    bundle = desk.root / "case.zip"
    code, _, err = desk.cli("export", str(task["id"]), "-o", str(bundle))
    assert code == 0, err
    other = str(desk.root / "other.sqlite3")
    code, _, err = desk.cli("import", str(bundle), "--db", other, "--trust")
    assert code == 0, err
    code, out, _ = desk.cli("list", "--db", other)
    assert code == 0 and "[read-only: imported from case bundle " in out
    code, out, _ = desk.cli("show", str(task["id"]), "--db", other)
    assert "read-only: imported from bundle:" in out
    code, _, err = desk.cli("reopen", str(task["id"]), "--reason", "x", "--db", other)
    assert code == 3 and "read-only" in err


def test_demo_twice_does_not_duplicate(desk: Desk) -> None:
    desk.script([{"model": "unused", "turns": [{"content": "the demo brings its own script"}]}])
    first = desk.cli_json("demo")
    second = desk.cli_json("demo")
    assert [t["id"] for t in second] == [t["id"] for t in first]
    assert len(desk.cli_json("list", "--db", str(desk.root / "demo.sqlite3"))) == len(first)


def test_demo_goes_to_its_own_workspace_never_the_analysts(desk: Desk) -> None:
    _reviewable(desk)  # the analyst's own work
    mine = desk.cli_json("list")
    desk.script([{"model": "unused", "turns": [{"content": "the demo brings its own script"}]}])
    code, out, err = desk.cli("demo")
    demo = desk.root / "demo.sqlite3"
    assert code == 0, err
    assert f"demo workspace ready in {demo}: 8 tasks" in out and f"--db {demo}" in out
    assert [t["id"] for t in desk.cli_json("list")] == [t["id"] for t in mine]  # untouched
    assert len(desk.cli_json("list", "--db", str(demo))) == 8


def test_short_prefix_says_too_short(desk: Desk) -> None:
    _reviewable(desk)
    code, _, err = desk.cli("show", "7ff")
    assert code == 4 and "too short" in err
