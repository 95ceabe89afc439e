"""Team nodes are judged one by one before the synthesis (issue 32, seed 004: sub-agents go through
the verifier), through the command line.

A 4-node team whose 'everest' node writes a height its own evidence contradicts: the node's verdict
is ``rejected``, the node runs once more with the verifier's feedback (and is accepted), the
synthesis is told every node verdict, and so is the final validator, whose prompt lists them. Node
verdicts are snapshots in the nodes' sessions, never validation rows: the task has one verdict.
"""

from __future__ import annotations

import json
from typing import Any

from tests.integration.conftest import Desk, verdict


def _search(query: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "search_corpus", "arguments": {"query": query}}]}


WRONG = "Mount Everest is 8,000 metres high."
RIGHT = "Mount Everest is 8,849 metres above sea level (2020 survey)."
FINAL = "Tides come mainly from the Moon's gravity; Mount Everest is 8,849 metres high."
CONTRADICTED = verdict(
    "rejected",
    0.1,
    category="goal_missed",
    issues=["NODE-ISSUE the evidence gives 8,849 metres, not 8,000"],
    recommended_revision_prompt="Give the height the survey states.",
)


def _team(desk: Desk) -> str:
    researcher = {"role": "Researcher", "tools": ["search_corpus"]}
    writer = {"role": "Writer", "tools": []}
    nodes = [
        {**researcher, "id": "tides", "task": "Find what causes tides."},
        {**researcher, "id": "everest", "task": "Find the height of Mount Everest."},
        {**writer, "id": "style", "task": "Suggest a one-line style for the briefing."},
        {**writer, "id": "audience", "task": "Name the audience of the briefing."},
    ]
    path = desk.root / "team.json"
    path.write_text(json.dumps({"mode": "parallel", "nodes": nodes}), encoding="utf-8")
    return str(path)


def _node(node_id: str, turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "agent", "match": f"You are node '{node_id}'", "turns": turns}


def test_a_contradicted_node_is_rejected_retried_once_and_its_verdicts_reach_the_final_validator(
    desk: Desk,
) -> None:
    desk.script(
        [
            {"model": "agent", "match": r"Team evidence \(plan", "turns": [{"content": FINAL}]},
            _node("tides", [_search("tides"), {"content": "Tides come mainly from the Moon's gravity."}]),
            # Turn 2 answers the retry: its request holds the search call and the rejected answer.
            _node("everest", [_search("Everest height"), {"content": WRONG}, {"content": RIGHT}]),
            _node("style", [{"content": "Plain sentences, one fact each."}]),
            _node("audience", [{"content": "Analysts new to the topic."}]),
            # The final validator is the one told node verdicts; a node answer of 8,000 m is rejected.
            {
                "model": "validator",
                "match": r"Node verdict",
                "turns": [{"content": verdict("accepted", 0.9)}],
            },
            {
                "model": "validator",
                "match": r"(?s)Final answer to judge.*8,000 metres",
                "turns": [{"content": CONTRADICTED}],
            },
            # The retry is judged with the rejected run's search result (its own run searched nothing).
            {
                "model": "validator",
                "match": r"(?s)snippet: [^\n]*8,849 metres.*Final answer to judge.*8,849 metres above",
                "turns": [{"content": verdict("accepted", 0.95)}],
            },
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.8)}]},
        ]
    )
    task = desk.cli_json("run", "Brief me on tides and the height of Everest.", "--team", _team(desk))
    assert task["status"] == "awaiting_feedback"
    shown = desk.cli_json("show", task["id"])

    nodes = {n["node_id"]: n for n in shown["attempts"][0]["packet"]["team_node_results"]}
    assert list(nodes) == ["tides", "everest", "style", "audience"]
    everest = nodes["everest"]
    assert [(v["status"], v["score"]) for v in everest["verdicts"]] == [("rejected", 0.1), ("accepted", 0.95)]
    assert everest["verdicts"][0]["retried"] is True
    assert everest["output_text"] == RIGHT
    [rejected_run] = everest["rejected_runs"]  # its evidence is kept beside the retry's
    assert rejected_run["output_text"] == WRONG and len(rejected_run["tool_results"]) == 1
    assert all(
        [v["status"] for v in nodes[n]["verdicts"]] == ["accepted"] for n in ("tides", "style", "audience")
    )

    node_runs = [r for r in shown["sessions"] if r.get("label") == "everest"]
    assert len(node_runs) == 1  # the retry continued the node's own session
    runs = [
        e for e in shown["events"] if e["kind"] == "run_started" and e["payload"].get("node_id") == "everest"
    ]
    assert len(runs) == 2  # the first run and exactly one retry

    snapshots = [e["payload"] for e in shown["events"] if e["kind"] == "task_validation_snapshotted"]
    assert sorted(p.get("node_id") or "" for p in snapshots) == [
        "",
        "audience",
        "everest",
        "everest",
        "style",
        "tides",
    ]
    [final] = shown["validations"]  # node verdicts are not the task's verdicts
    prompt = str(final["prompt"])
    assert prompt.count("Node verdict") == 5
    assert "rejected, category goal_missed, score 0.10, retried once with this feedback" in prompt
    assert "NODE-ISSUE" in prompt

    synthesis = next(
        m["content"]
        for e in shown["events"]
        for m in (e["payload"] or {}).get("input_messages") or []
        if "Team evidence (plan" in str(m.get("content"))
    )
    assert synthesis.count("Node verdict") == 5 and "NODE-ISSUE" in synthesis
    retry_ask = next(m["content"] for e in runs[1:] for m in e["payload"]["input_messages"])
    assert "NODE-ISSUE" in retry_ask and "Give the height the survey states." in retry_ask


def test_with_verify_team_nodes_off_only_the_final_answer_is_judged(desk: Desk) -> None:
    desk.env(verify_team_nodes="false")
    desk.script(
        [
            {"model": "agent", "match": r"Team evidence \(plan", "turns": [{"content": FINAL}]},
            _node("tides", [_search("tides"), {"content": "Tides come mainly from the Moon's gravity."}]),
            _node("everest", [_search("Everest height"), {"content": WRONG}]),
            _node("style", [{"content": "Plain sentences."}]),
            _node("audience", [{"content": "Analysts."}]),
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.8)}]},
        ]
    )
    task = desk.cli_json("run", "Brief me on tides and the height of Everest.", "--team", _team(desk))
    shown = desk.cli_json("show", task["id"])
    snapshots = [e for e in shown["events"] if e["kind"] == "task_validation_snapshotted"]
    assert len(snapshots) == 1 and "Node verdict" not in str(shown["validations"][0]["prompt"])
