"""The no-tools finalization refuses a preamble (issue 32, seed 002: it must return a usable answer).

At the tool budget the model is asked to answer without tools. A reply that still asks for tools
or only announces more work ("Let me search more.") is not an answer: it is refused by the same
pre-check a team synthesis gets, the model is asked once more, firmly, and a second such reply
ends the run with the documented "No usable answer was produced" text, recorded as such, and no
validator call.
"""

from __future__ import annotations

import json
from typing import Any

from core.agent.loop import FIRM_FINALIZATION_INSTRUCTION, NO_ANSWER_MESSAGE
from tests.integration.conftest import Desk, verdict

SEARCH = {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides"}}]}
PREAMBLE = {"content": "Let me search more.", **SEARCH}


def _events(shown: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in shown["events"] if e["kind"] == kind]


def test_a_preamble_twice_is_no_usable_answer_and_never_reaches_the_validator(desk: Desk) -> None:
    desk.env(max_tool_iterations=1)
    desk.script(
        [
            {"model": "agent", "turns": [SEARCH, PREAMBLE, PREAMBLE]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    code, out, err = desk.cli("run", "What causes tides?", "--json")
    assert code == 5, err  # the task failed: no usable answer
    task = json.loads(out)
    assert task["status"] == "failed" and task["validation_outcome"] is None
    assert task["attempts"][0]["finish_reason"] == "max_tool_iterations_unfinalized"
    shown = desk.cli_json("show", task["id"])
    assert shown["validations"] == []  # the preamble never went to the validator
    [end] = _events(shown, "run_finished")
    assert end["payload"]["output_text"] == NO_ANSWER_MESSAGE
    assert end["payload"]["error"] == "finalization refused: the reply still asked for tools, twice"
    asks = [e["payload"] for e in _events(shown, "finalization_requested")]
    assert [a.get("refused") for a in asks] == [None, "still asked for tools"]
    assert asks[1]["message"]["content"] == FIRM_FINALIZATION_INSTRUCTION.format(why="still asked for tools")
    assert len(_events(shown, "tool_result_recorded")) == 1  # the preambles' calls never ran


def test_an_announcement_is_refused_and_the_firm_retry_answers(desk: Desk) -> None:
    desk.env(max_tool_iterations=1)
    answer = "From the evidence: tides are caused mainly by the Moon's gravity."
    desk.script(
        [
            {"model": "agent", "turns": [SEARCH, {"content": "Let me search more."}, {"content": answer}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert task["status"] == "awaiting_feedback"
    assert task["attempts"][0]["finish_reason"] == "max_tool_iterations_finalized"
    shown = desk.cli_json("show", task["id"])
    assert shown["attempts"][0]["final_output"] == answer
    asks = [e["payload"] for e in _events(shown, "finalization_requested")]
    assert [a.get("refused") for a in asks] == [None, "only announced more work"]
    [validation] = shown["validations"]
    assert "Let me search more." not in validation["prompt"].split("Final answer to judge")[-1]
