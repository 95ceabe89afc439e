"""The task service end to end, through the command line, on the scripted provider."""

from __future__ import annotations

import json

from tests.integration.conftest import Desk, verdict

SEARCH = {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides moon"}}]}
CITE = [{"claim": "Moon causes tides", "evidence_id": "E1", "quote": "Tides", "verdict": "supported"}]


def test_accepted_first_time(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [SEARCH, {"content": "Tides come mainly from the Moon's gravity."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.92, citations=CITE)}]},
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert task["status"] == "awaiting_feedback"
    assert task["validation_outcome"] == "accepted"
    assert [(a["finish_reason"], a["validation_status"]) for a in task["attempts"]] == [("stop", "accepted")]
    shown = desk.cli_json("show", task["id"])
    tool = shown["attempts"][0]["packet"]["main_run"]["tool_results"][0]
    assert tool["tool_name"] == "search_corpus" and "Moon" in tool["content"]
    validation = shown["validations"][0]
    assert json.loads(validation["raw_response"])["status"] == "accepted"
    assert validation["result"]["citations"][0]["check"] == "verified"
    assert "What causes tides?" in (validation["prompt"] or "")


def test_rejected_then_accepted_on_retry(desk: Desk) -> None:
    desk.script(
        [
            {
                "model": "agent",
                "turns": [
                    SEARCH,
                    {"content": "Tides come from the Sun alone."},
                    {"content": "Tides come mainly from the Moon."},
                ],
            },
            {
                "model": "validator",
                "match": "mainly from the Moon",
                "turns": [{"content": verdict("accepted", 0.9)}],
            },
            {
                "model": "validator",
                "turns": [
                    {
                        "content": verdict(
                            "rejected",
                            0.2,
                            issues=["contradicts E1"],
                            recommended_revision_prompt="Use E1: the Moon.",
                        )
                    }
                ],
            },
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert task["status"] == "awaiting_feedback" and task["validation_outcome"] == "accepted"
    assert [a["validation_status"] for a in task["attempts"]] == ["rejected", "accepted"]
    assert [a["trigger"] for a in task["attempts"]] == ["initial", "validator_revision"]
    shown = desk.cli_json("show", task["id"])
    user_msgs = [e for e in shown["events"] if e["kind"] == "run_started"]
    assert "Use E1: the Moon." in json.dumps(user_msgs[1]["payload"]["input_messages"])
    assert len({e["session_id"] for e in shown["events"] if e["kind"] == "run_started"}) == 1  # same session


def test_max_validation_attempts_means_exactly_that_many(desk: Desk) -> None:
    desk.env(max_validation_attempts=3)
    desk.script(
        [
            {"model": "agent", "turns": [{"content": f"answer {i}"} for i in range(6)]},
            {"model": "validator", "turns": [{"content": verdict("rejected", 0.1, issues=["wrong"])}]},
        ]
    )
    task = desk.cli_json("run", "Question?")
    assert len(task["attempts"]) == 3
    assert desk.rows("select count(*) from validations") == [(3,)]
    assert task["status"] == "needs_review" and task["validation_outcome"] == "force_accepted"


def test_insufficient_evidence_goes_to_review(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Everest is 9,000 m."}]},
            {
                "model": "validator",
                "turns": [{"content": verdict("insufficient_evidence", 0.4, category="incomplete")}],
            },
        ]
    )
    task = desk.cli_json("run", "How tall is Everest?")
    assert task["status"] == "needs_review" and task["validation_outcome"] == "force_accepted"
    assert task["attempts"][0]["validation_status"] == "insufficient_evidence"


def test_validator_error_after_stuck_schema_retries(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "An answer."}]},
            {"model": "validator", "turns": [{"content": "I think it is fine!"}] * 4},
        ]
    )
    task = desk.cli_json("run", "Anything?")
    assert task["status"] == "needs_review" and task["validation_outcome"] == "force_accepted"
    assert task["attempts"][0]["validation_status"] == "validator_error"
    shown = desk.cli_json("show", task["id"])
    failures = [e for e in shown["events"] if e["kind"] == "output_schema_validation_failed"]
    assert len(failures) == 2 and failures[0]["payload"]["stage"] == "json-parse"
    debug = shown["validations"][0]["debug"]
    assert debug["schema_retries"] >= 1


def test_budget_finalized_answer(desk: Desk) -> None:
    desk.env(max_tool_iterations=1)
    desk.script(
        [
            {"model": "agent", "turns": [SEARCH, {"content": "From the evidence: the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.8)}]},
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert task["attempts"][0]["finish_reason"] == "max_tool_iterations_finalized"
    assert task["status"] == "awaiting_feedback"


def test_no_usable_answer_fails(desk: Desk) -> None:
    desk.script([{"model": "agent", "turns": [{"error": "bad_request"}]}])
    code, out, err = desk.cli("run", "Anything?", "--json")
    assert code == 5  # a failed task is not a success: the reason is on stderr and in --json
    task = json.loads(out)
    assert task["error"] and task["error"] in err
    assert task["status"] == "failed" and task["validation_outcome"] is None
    assert task["attempts"][0]["finish_reason"] == "llm_error"
    assert desk.rows("select count(*) from validations") == [(0,)]


def test_team_run_with_one_failing_node(desk: Desk) -> None:
    team = desk.root / "team.json"
    team.write_text(
        json.dumps(
            {
                "mode": "parallel",
                "nodes": [
                    {
                        "id": "tides",
                        "role": "Researcher",
                        "task": "Research ALPHA tides",
                        "tools": ["search_corpus"],
                    },
                    {
                        "id": "peaks",
                        "role": "Researcher",
                        "task": "Research BRAVO peaks",
                        "tools": ["search_corpus"],
                    },
                ],
            }
        )
    )
    desk.script(
        [
            {
                "model": "agent",
                "match": "source of truth",
                "turns": [{"content": "Synthesis: the Moon; peaks unknown."}],
            },
            {"model": "agent", "match": "ALPHA", "turns": [SEARCH, {"content": "Moon causes tides."}]},
            {"model": "agent", "match": "BRAVO", "turns": [{"error": "bad_request"}]},
            {"model": "validator", "turns": [{"content": verdict("insufficient_evidence", 0.5)}]},
        ]
    )
    task = desk.cli_json("run", "Tides and peaks?", "--team", str(team))
    assert task["status"] == "needs_review"
    packet = desk.cli_json("show", task["id"])["attempts"][0]["packet"]
    nodes = {n["node_id"]: n for n in packet["team_node_results"]}
    assert [n["node_id"] for n in packet["team_node_results"]] == ["tides", "peaks"]
    assert nodes["peaks"]["status"] == "failed"
    assert nodes["tides"]["evidence"]["tool_results"][0]["tool_name"] == "search_corpus"
    assert packet["final_output"].startswith("Synthesis")


def _accepted_task(desk: Desk) -> dict[str, object]:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "first answer"}, {"content": "revised answer"}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task: dict[str, object] = desk.cli_json("run", "Question?")
    return task


def test_feedback_satisfied_closes(desk: Desk) -> None:
    task = _accepted_task(desk)
    closed = desk.cli_json("feedback", str(task["id"]), "satisfied", "--note", "good")
    assert closed["status"] == "closed"
    shown = desk.cli_json("show", str(task["id"]))
    assert [f["action"] for f in shown["feedback"]] == ["satisfied"]
    event = next(e for e in shown["events"] if e["kind"] == "analyst_feedback_recorded")["payload"]
    assert event["note"] == "good" and event["reviewer"] and event["action"] == "satisfied"


def test_feedback_revise_runs_new_attempt_in_same_session(desk: Desk) -> None:
    task = _accepted_task(desk)
    revised = desk.cli_json("feedback", str(task["id"]), "revise", "--prompt", "Add the survey year.")
    assert revised["status"] == "awaiting_feedback"
    assert [a["trigger"] for a in revised["attempts"]] == ["initial", "analyst_revision"]
    shown = desk.cli_json("show", str(task["id"]))
    assert shown["attempts"][1]["final_output"] == "revised answer"
    starts = [e for e in shown["events"] if e["kind"] == "run_started"]
    assert "Add the survey year." in json.dumps(starts[1]["payload"]["input_messages"])


def test_feedback_abandon(desk: Desk) -> None:
    task = _accepted_task(desk)
    assert desk.cli_json("feedback", str(task["id"]), "abandon")["status"] == "abandoned"


def test_stale_version_conflict_changes_nothing(desk: Desk) -> None:
    task = _accepted_task(desk)
    before = desk.dump()
    code, _, err = desk.cli(
        "feedback", str(task["id"]), "satisfied", "--version", str(int(str(task["version"])) - 1)
    )
    assert code == 3 and "changed since it was read" in err and "Traceback" not in err
    assert desk.dump() == before


def test_refused_action_on_closed_task(desk: Desk) -> None:
    task = _accepted_task(desk)
    desk.cli_json("feedback", str(task["id"]), "satisfied")
    before = desk.dump()
    code, _out, err = desk.cli("feedback", str(task["id"]), "revise", "--prompt", "more")
    assert code == 3
    assert err.count("\n") == 1 and "closed" in err and "Traceback" not in err
    assert desk.dump() == before


def test_configuration_errors_exit_4(desk: Desk) -> None:
    (desk.root / "script.json").write_text("{ not json", encoding="utf-8")
    code, _, err = desk.cli("run", "Question?")
    assert code == 4 and "script.json" in err and err.count("\n") == 1
    assert not desk.db.exists() or desk.rows("select count(*) from tasks") == [(0,)]
    desk.script([{"model": "agent", "turns": [{"content": "x"}]}])
    bogus = desk.root / "bogus.sqlite3"
    bogus.write_text("not a database")
    code, _, err = desk.cli("list", "--db", str(bogus))
    assert code == 4 and "not an SQLite database" in err


def test_usage_errors_exit_2(desk: Desk) -> None:
    code, _, err = desk.cli("feedback")
    assert code == 2 and "usage" in err
