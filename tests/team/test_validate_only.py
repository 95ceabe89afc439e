"""Validate-only batch rows: a row's answer is judged as given, and no agent writes one.

The agent's scripted conversation only matches the one row without an answer: an agent call for
any other row would find no conversation and fail its task, so "zero agent calls" is proven by
the provider itself as well as by the recorded runs and request events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.cli.main import main as cli_main
from tests.team.conftest import VERDICT_OK, assert_event_sequences_contiguous, sync_rows

VERDICT_REJECTED = json.dumps(
    {
        "goal_achievement": "missed",
        "completeness": "complete",
        "rule_compliance": "no rules",
        "status": "rejected",
        "score": 0.1,
        "issues": ["the Sun is not made of cheese"],
        "recommended_revision_prompt": "Answer from the evidence.",
        "category": "goal_missed",
        "citations": [],
    }
)


def _script(path: Path, *, revise_answer: str = "Revised: the Moon's gravity.") -> Path:
    conversations = [
        # the agent answers only the row without an answer, and an analyst's revision; the
        # provider answers with the turn numbered by the assistant messages already sent, so the
        # revision's reply is turn 2: the supplied answer is the session's first reply
        {
            "model": "agent",
            "match": "asks for a revision",
            "turns": [{"content": "never sent"}, {"content": revise_answer}],
        },
        {"model": "agent", "match": "Why is the sky blue", "turns": [{"content": "Rayleigh scattering."}]},
        {"model": "validator", "match": "cheese", "turns": [{"content": VERDICT_REJECTED}]},
        {"model": "validator", "turns": [{"content": VERDICT_OK}]},
    ]
    path.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    return path


def _batch(path: Path) -> Path:
    rows = [
        {"key": "tides", "text": "What causes tides?", "answer": "The Moon's gravity pulls the oceans."},
        {"key": "sun", "text": "What is the Sun made of?", "answer": "The Sun is made of cheese."},
        {"key": "sky", "text": "Why is the sky blue?"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _by_key(db_url: str) -> dict[str, tuple[Any, ...]]:
    rows = sync_rows(
        db_url,
        "select batch_key, id, status, validation_outcome, attempt_count, latest_validation_status, "
        "batch_id from tasks",
    )
    return {str(r[0]): r[1:] for r in rows}


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def test_validate_only_rows_are_judged_as_given_with_no_agent_call(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite: the worker runs in-process; PostgreSQL: a procrastinate worker runs the jobs."""
    script = _script(tmp_path / "script.json")
    batch = _batch(tmp_path / "rows.jsonl")
    code, _out, err = _cli(
        capsys, "batch", str(batch), "--db", db_url, "--create", "--script", str(script), "--json"
    )
    assert code == 0, err
    code, out, err = _cli(capsys, "worker", "--db", db_url, "--script", str(script), "--once", "--json")
    assert code == 0, err
    assert json.loads(out)["finished"] == {"awaiting_feedback": 2, "needs_review": 1}

    tasks = _by_key(db_url)
    # accepted -> awaiting_feedback; rejected -> review, with no automatic retry of a supplied answer
    assert tasks["tides"][1:5] == ("awaiting_feedback", "accepted", 1, "accepted")
    assert tasks["sun"][1:5] == ("needs_review", "force_accepted", 1, "rejected")
    assert tasks["sky"][1:5] == ("awaiting_feedback", "accepted", 1, "accepted")

    supplied_ids = (tasks["tides"][0], tasks["sun"][0])
    where = f"task_id in ('{supplied_ids[0]}', '{supplied_ids[1]}')"
    # zero agent LLM calls for the supplied rows: no agent run, no request, no response
    assert sync_rows(db_url, f"select kind, count(*) from runs where {where} group by kind") == [
        ("supplied", 2)
    ]
    agent_requests = (
        "select count(*) from events e join runs r on r.id = e.run_id "
        f"where r.{where} and e.kind in ('llm_request_snapshotted', 'llm_response_received')"
    )
    assert sync_rows(db_url, agent_requests) == [(0,)]
    assert sync_rows(db_url, f"select count(*) from runs where kind = 'agent' and {where}") == [(0,)]

    # the answer is recorded as supplied, with its provenance (batch id + row key)
    tides_id, batch_id = tasks["tides"][0], tasks["tides"][5]
    ((payload, content),) = sync_rows(
        db_url,
        f"select payload, content from events where kind = 'answer_supplied' and task_id = '{tides_id}'",
    )
    payload = _json(payload)
    assert payload["batch_id"] == batch_id and payload["row_key"] == "tides"
    assert payload["generated"] is False and "validation only" in payload["note"]
    assert content == "The Moon's gravity pulls the oceans."

    # the packet says there is no tool evidence; the final output is the row's answer
    ((final, packet),) = sync_rows(
        db_url, f"select final_output, packet from attempts where task_id = '{tides_id}'"
    )
    packet = _json(packet)
    assert final == "The Moon's gravity pulls the oceans."
    assert packet["main_run"]["tool_results"] == [] and packet["main_run"]["llm_calls"] == 0
    assert any("answer supplied for validation only" in w for w in packet["main_run"]["warnings"])
    assert_event_sequences_contiguous(db_url)


def test_revise_on_a_validate_only_task_runs_the_agent_with_the_note(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Decided: a Revise asks for a new answer, so the agent writes one, continuing the session."""
    script = _script(tmp_path / "script.json")
    batch = _batch(tmp_path / "rows.jsonl")
    assert _cli(capsys, "batch", str(batch), "--db", sqlite_url, "--create", "--script", str(script))[0] == 0
    assert _cli(capsys, "worker", "--db", sqlite_url, "--script", str(script), "--once")[0] == 0
    tides_id = _by_key(sqlite_url)["tides"][0]
    code, out, err = _cli(
        capsys,
        "feedback",
        tides_id,
        "revise",
        "--prompt",
        "Say which body's gravity.",
        "--db",
        sqlite_url,
        "--script",
        str(script),
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["status"] == "awaiting_feedback"
    attempts = sync_rows(
        sqlite_url,
        f'select a."index", a.final_output, r.kind from attempts a join runs r on r.attempt_id = a.id '
        f"where a.task_id = '{tides_id}' order by a.\"index\"",
    )
    assert attempts == [
        (1, "The Moon's gravity pulls the oceans.", "supplied"),
        (2, "Revised: the Moon's gravity.", "agent"),
    ]
    # the agent's request held the supplied answer as the session's reply, then the analyst's note
    ((started,),) = sync_rows(
        sqlite_url,
        "select e.payload from events e join runs r on r.id = e.run_id "
        f"where r.kind = 'agent' and r.task_id = '{tides_id}' and e.kind = 'run_started'",
    )
    started = _json(started)
    assert started["history_length"] >= 3  # system + task + the supplied answer
    assert "Say which body's gravity." in started["input_messages"][-1]["content"]
    assert_event_sequences_contiguous(sqlite_url)
