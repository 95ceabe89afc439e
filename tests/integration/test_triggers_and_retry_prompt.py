"""Keyword triggers match whole words; the failure category reaches the retry prompt (issue 14, item 4)."""

from __future__ import annotations

import json

from tests.integration.conftest import Desk, verdict


def test_undone_does_not_trigger_done(desk: Desk) -> None:
    desk.env(validation_mode="keywords", trigger_keywords='["done"]')
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "The migration was undone and abandoned."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task = desk.cli_json("run", "What happened to the migration?")
    assert task["attempts"][0]["validation_status"] is None  # not judged
    assert desk.rows("select count(*) from validations") == [(0,)]


def test_whole_word_any_case_triggers(desk: Desk) -> None:
    desk.env(validation_mode="keywords", trigger_keywords='["done"]')
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "DONE: the migration ran."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task = desk.cli_json("run", "What happened to the migration?")
    assert task["attempts"][0]["validation_status"] == "accepted"


def test_default_keywords_apply_when_none_are_configured(desk: Desk) -> None:
    desk.env(validation_mode="keywords")
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Here you go: the tides come from the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert task["attempts"][0]["validation_status"] == "accepted"


def test_the_category_is_in_the_retry_message(desk: Desk) -> None:
    desk.script(
        [
            {
                "model": "agent",
                "turns": [{"content": "Tides exist."}, {"content": "Tides come from the Moon."}],
            },
            {
                "model": "validator",
                "match": "from the Moon",
                "turns": [{"content": verdict("accepted", 0.9)}],
            },
            {
                "model": "validator",
                "turns": [
                    {
                        "content": verdict(
                            "rejected",
                            0.2,
                            category="incomplete",
                            issues=["the cause is missing"],
                            recommended_revision_prompt="Name the cause.",
                        )
                    }
                ],
            },
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    shown = desk.cli_json("show", task["id"])
    starts = [e for e in shown["events"] if e["kind"] == "run_started"]
    retry = json.dumps(starts[1]["payload"]["input_messages"])
    assert "flagged it for `incomplete`: the cause is missing" in retry


def test_a_skipped_validation_is_unvalidated_and_never_awaits_feedback(desk: Desk) -> None:
    desk.env(validation_mode="off")
    desk.script([{"model": "agent", "turns": [{"content": "Tides come from the Moon."}]}])
    task = desk.cli_json("run", "What causes tides?")
    assert task["status"] == "needs_review" and task["validation_outcome"] == "unvalidated"
    listed = desk.cli_json("list", "--status", "awaiting_feedback")
    assert listed == []
    code, out, _ = desk.cli("show", task["id"])
    assert code == 0 and "outcome unvalidated" in out


def test_show_names_why_an_answer_is_not_endorsed(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Everest is 9,000 m."}]},
            {"model": "validator", "turns": [{"content": verdict("insufficient_evidence", 0.4)}]},
        ]
    )
    task = desk.cli_json("run", "How tall is Everest?")
    code, out, _ = desk.cli("show", task["id"])
    assert code == 0 and "outcome not endorsed: insufficient evidence" in out
    assert "force" not in out.split("### Answer")[0]
