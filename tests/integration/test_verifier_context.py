"""The verifier context in seed 004's order, through the command line (issue 14, item 2).

The validator of a retry sees the execution metadata of every attempt and every earlier verdict in
sections of their own, the history never repeats evidence (a team prompt holds each node output
exactly once), and a team retry's synthesis names the items by the ids the validator cites.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.integration.conftest import Desk, verdict

SEARCH = {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides"}}]}
NODE_OUTPUTS = ["OUT-TIDES-1 the Moon", "OUT-PEAKS-1 unknown", "OUT-TIDES-2 the Moon", "OUT-PEAKS-2 8,849 m"]
REJECTION = verdict(
    "rejected",
    0.2,
    category="incomplete",
    issues=["ISSUE-MARKER-1 the peaks are missing"],
    missing_requirements=["MISSING-MARKER-1 the height"],
    recommended_revision_prompt="REVISION-MARKER-1 give the height of Everest",
)


def _team(desk: Desk) -> str:
    path = desk.root / "team.json"
    node = {"role": "Researcher", "tools": ["search_corpus"]}
    nodes = [
        {**node, "id": "tides", "task": "Research ALPHA tides"},
        {**node, "id": "peaks", "task": "Research BRAVO peaks"},
    ]
    path.write_text(json.dumps({"mode": "parallel", "nodes": nodes}), encoding="utf-8")
    return str(path)


def _prompts(shown: dict[str, Any]) -> list[str]:
    return [str(v["prompt"] or "") for v in shown["validations"]]


def _section(prompt: str, start: str, end: str) -> str:
    return prompt.split(start, 1)[1].split(end, 1)[0]


def _synthesis_requests(shown: dict[str, Any]) -> list[str]:
    texts = []
    for event in shown["events"]:
        for message in (event["payload"] or {}).get("input_messages") or []:
            content = message.get("content")
            if isinstance(content, str) and "Team evidence (plan" in content:
                texts.append(content)
    return texts


def test_team_retry_prompt_holds_each_node_output_once_under_the_synthesis_ids(desk: Desk) -> None:
    tides_1, peaks_1, tides_2, peaks_2 = NODE_OUTPUTS
    # The task's verdicts and ids only: node verification (its own test) would add node verdicts.
    desk.env(verify_team_nodes="false")
    desk.script(
        [
            {
                "model": "agent",
                "match": "source of truth",
                "turns": [
                    {"content": "Synthesis one: the Moon."},
                    {"content": "Synthesis two: Moon; 8,849 m."},
                ],
            },
            {
                "model": "agent",
                "match": "(?s)ALPHA.*This is attempt 2",
                "turns": [SEARCH, {"content": tides_2}],
            },
            {"model": "agent", "match": "(?s)BRAVO.*This is attempt 2", "turns": [{"content": peaks_2}]},
            {"model": "agent", "match": "ALPHA", "turns": [SEARCH, {"content": tides_1}]},
            {"model": "agent", "match": "BRAVO", "turns": [{"content": peaks_1}]},
            {
                "model": "validator",
                "match": r"Attempt 1 \(an earlier attempt\):",
                "turns": [{"content": verdict("accepted", 0.9)}],
            },
            {"model": "validator", "turns": [{"content": REJECTION}]},
        ]
    )
    task = desk.cli_json("run", "Tides and peaks?", "--team", _team(desk))
    assert [a["validation_status"] for a in task["attempts"]] == ["rejected", "accepted"]
    shown = desk.cli_json("show", task["id"])
    first, second = _prompts(shown)

    # Each node output exactly once: in the evidence, never again inside the synthesis request
    # that the history shows (it used to be repeated there, doubling a team prompt).
    for output in NODE_OUTPUTS[:2]:
        assert first.count(output) == 1, output
    for output in NODE_OUTPUTS:
        assert second.count(output) == 1, output
    history = _section(second, "## Recent conversation history", "## Execution metadata")
    assert "Team evidence (plan" in history and "not repeated here" in history
    assert "Synthesis one: the Moon." not in history  # attempt 1's answer is evidence E4: a pointer
    assert "[answer recorded as evidence E4" in history

    # Attempt 2's synthesis saw the task-wide ids (E5.. after attempt 1's four items), the ones the
    # validator cites, not E1 again.
    synthesis_2 = _synthesis_requests(shown)[-1]
    for eid, where in (("E5", "tool result: team node 'tides'"), ("E6", "node output: team node 'tides'")):
        assert f"[{eid}] {where}" in synthesis_2 and f"[{eid}] {where}" in second
    assert "[E1]" not in synthesis_2
    assert re.search(
        r"\[E6\] node output: team node 'tides'[^\n]*\n(?:(?!\n\[E7\]).)*OUT-TIDES-2", second, re.S
    )

    # Execution metadata for both attempts, team nodes included; previous feedback whole.
    metadata = _section(second, "## Execution metadata", "## Previous feedback")
    assert (
        "Attempt 1 (an earlier attempt):" in metadata and "Attempt 2 (the attempt under review):" in metadata
    )
    assert metadata.count("- team node 'tides' (Researcher): status `succeeded`") == 2
    assert "search_corpus ×1" in metadata and "synthesis run: finish reason `stop`" in metadata
    feedback = _section(second, "## Previous feedback", "## Final answer to judge")
    for marker in (
        "`rejected`",
        "category `incomplete`",
        "ISSUE-MARKER-1",
        "MISSING-MARKER-1",
        "REVISION-MARKER-1",
    ):
        assert marker in feedback, marker
    assert "(none: this is the first verdict" in first


def _many_searches(n: int) -> dict[str, Any]:
    return {"tool_calls": [{"name": "search_corpus", "arguments": {"query": f"tides {i}"}} for i in range(n)]}


def test_previous_feedback_outlives_the_history_window_and_metadata_needs_no_evidence(desk: Desk) -> None:
    # Attempt 1 answers with no tool (no evidence at all); attempt 2 makes 30 tool calls, so the
    # retry message with the first verdict falls out of the last 30 messages of history.
    desk.script(
        [
            {
                "model": "agent",
                "turns": [
                    {"content": "A guess."},
                    _many_searches(15),
                    _many_searches(15),
                    {"content": "The Moon."},
                ],
            },
            {
                "model": "validator",
                "match": r"Attempt 1 \(an earlier attempt\):",
                "turns": [{"content": verdict("accepted", 0.9)}],
            },
            {"model": "validator", "turns": [{"content": REJECTION}]},
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert [a["validation_status"] for a in task["attempts"]] == ["rejected", "accepted"]
    first, second = _prompts(desk.cli_json("show", task["id"]))
    metadata_1 = _section(first, "## Execution metadata", "## Previous feedback")
    assert "No evidence was gathered in any attempt" in first
    assert "main run: finish reason `stop`" in metadata_1 and "0 tool calls" in metadata_1
    assert re.search(r"duration [0-9.]+ s, 1 LLM call, 0 tool calls, tokens \d+ in / \d+ out", metadata_1)
    history = _section(second, "## Recent conversation history", "## Execution metadata")
    assert "ISSUE-MARKER-1" not in history  # the retry message dropped out of the window...
    feedback = _section(second, "## Previous feedback", "## Final answer to judge")
    assert "ISSUE-MARKER-1" in feedback and "REVISION-MARKER-1" in feedback  # ...the feedback did not
    assert "search_corpus ×30" in _section(second, "## Execution metadata", "## Previous feedback")


def test_previous_feedback_lists_the_analysts_revision(desk: Desk) -> None:
    desk.env(coherence_max_issues=1)  # an acceptance with a note still counts: this test reads the note
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "The Moon."}, {"content": "The Moon, twice a day."}]},
            {
                "model": "validator",
                "turns": [{"content": verdict("accepted", 0.9, issues=["VERDICT-1-NOTE"])}],
            },
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    desk.cli_json("feedback", task["id"], "revise", "--prompt", "ANALYST-MARKER say how often")
    second = _prompts(desk.cli_json("show", task["id"]))[1]
    feedback = _section(second, "## Previous feedback", "## Final answer to judge")
    verdict_at, analyst_at = (
        feedback.index("Attempt 1: validator verdict `accepted`"),
        feedback.index("Analyst after attempt 1: asked for a revision"),
    )
    assert verdict_at < analyst_at and "VERDICT-1-NOTE" in feedback
    assert "Revision prompt: ANALYST-MARKER say how often" in feedback


def test_report_links_a_retry_citation_to_the_attempt_that_gathered_it(desk: Desk) -> None:
    from tests.integration.test_evidence_across_attempts import CITE, FACT, SEES_ATTEMPT_1_FACT, _with_vault

    _with_vault(desk)
    search = {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "vault access code"}}]}
    desk.script(
        [
            {"model": "agent", "turns": [search, {"content": "Not found."}, {"content": f"It is {FACT}."}]},
            {
                "model": "validator",
                "match": SEES_ATTEMPT_1_FACT + r".*Final answer to judge.*" + FACT,
                "turns": [{"content": verdict("accepted", 0.9, citations=CITE)}],
            },
            {"model": "validator", "turns": [{"content": REJECTION}]},
        ]
    )
    task = desk.cli_json("run", "What is the vault access code?")
    assert [a["validation_status"] for a in task["attempts"]] == ["rejected", "accepted"]
    out = desk.root / "report.html"
    code, _, err = desk.cli("report", task["id"], "-o", str(out))
    assert code == 0, err
    html = out.read_text(encoding="utf-8")
    # Attempt 2's verdict cites E1, which attempt 1 gathered: the link reaches attempt 1's row.
    assert '<a href="#a1-E1">E1</a>' in html and 'id="a1-E1"' in html and 'id="a2-E1"' not in html
