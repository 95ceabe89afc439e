"""One structured-output loop for the validator, the final answer and the planner (issue 14, item 3).

Counts come from the scripted provider's own request log, so "one call" means one request reached
the model, not one entry in our events.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.llm import reset_scripted_stats, scripted_stats
from tests.integration.conftest import Desk, verdict

SCHEMA = {
    "type": "object",
    "required": ["depth_m"],
    "properties": {
        "depth_m": {"type": "number"},
        "source": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        },
    },
}
SIMPLIFIED = json.dumps(
    {"properties": {"depth_m": {"type": "number"}}, "required": ["depth_m"], "type": "object"}, sort_keys=True
)


def _calls(model: str) -> int:
    return sum(1 for r in scripted_stats().requests if r.model == model)


def _events(shown: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in shown["events"] if e["kind"] == kind]


def _run_with_schema(desk: Desk) -> dict[str, Any]:
    path = desk.root / "schema.json"
    path.write_text(json.dumps(SCHEMA), encoding="utf-8")
    reset_scripted_stats()
    task = desk.cli_json("run", "How deep is the Mariana Trench?", "--output-schema", str(path))
    return dict(desk.cli_json("show", task["id"]))


def test_no_retries_means_one_call_on_both_paths(desk: Desk) -> None:
    desk.env(max_schema_retries=0)
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "About 10,935 metres."}] * 3},
            {"model": "validator", "turns": [{"content": "looks fine to me"}] * 3},
        ]
    )
    shown = _run_with_schema(desk)
    assert _calls("agent") == 1  # the answer itself; no re-ask
    assert _calls("validator") == 1
    final = [e["payload"] for e in _events(shown, "output_schema_validation_failed")]
    assert [(p["purpose"], p["attempt"]) for p in final] == [("final-answer", 1), ("validation:verdict", 1)]
    (unsatisfied,) = _events(shown, "output_schema_unsatisfied")
    assert unsatisfied["payload"]["status"] == "schema-retry-exhausted"
    assert shown["validations"][0]["result"]["status"] == "validator_error"


def test_two_identical_errors_stop_both_paths_as_a_stuck_loop(desk: Desk) -> None:
    desk.env(max_schema_retries=5)
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "About 10,935 metres."}] * 6},
            {"model": "validator", "turns": [{"content": "looks fine to me"}] * 6},
        ]
    )
    shown = _run_with_schema(desk)
    assert _calls("agent") == 2 and _calls("validator") == 2
    failures = [e["payload"] for e in _events(shown, "output_schema_validation_failed")]
    final = [p for p in failures if p["purpose"] == "final-answer"]
    judge = [p for p in failures if p["purpose"] == "validation:verdict"]
    assert [(p["attempt"], p["retries"]) for p in final] == [(1, 0), (2, 1)]
    assert [(p["attempt"], p["retries"]) for p in judge] == [(1, 0), (2, 1)]
    assert all(p["stage"] == "json-parse" and p["path"] is None for p in failures)
    assert final[0]["raw_output"] == "About 10,935 metres."
    (unsatisfied,) = _events(shown, "output_schema_unsatisfied")
    assert unsatisfied["payload"]["status"] == "schema-stuck-loop"
    assert "schema-stuck-loop" in shown["validations"][0]["result"]["issues"][0]


def test_tier_two_gets_the_simplified_schema_and_the_session_keeps_only_the_accepted_answer(
    desk: Desk,
) -> None:
    desk.env(max_schema_retries=3, schema_fallback_model="scripted/backup")
    desk.script(
        [
            {"model": "agent", "turns": [{"content": '{"depth_m": "deep"}'}] * 4},
            {
                "model": "backup",
                "match": "simplified JSON schema",
                "turns": [{"content": '{"depth_m": 10935}'}],
            },
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    shown = _run_with_schema(desk)
    backup = [r for r in scripted_stats().requests if r.model == "backup"]
    assert len(backup) == 1
    failures = [e["payload"] for e in _events(shown, "output_schema_validation_failed")]
    assert [(p["attempt"], p["path"], p["tier"]) for p in failures] == [(1, "depth_m", 1), (2, "depth_m", 1)]
    assert "not of type 'number'" in failures[0]["message"] and "depth_m" not in failures[0]["message"]
    (repaired,) = _events(shown, "output_schema_repaired")
    assert repaired["payload"]["tier"] == 2 and repaired["payload"]["attempts"] == 3
    assert json.loads(shown["attempts"][0]["final_output"]) == {"depth_m": 10935}
    prompt = shown["validations"][0]["prompt"] or ""
    history = prompt.split("## Recent conversation history", 1)[1].split("## Final answer to judge", 1)[0]
    # The accepted answer is the one under review: the history points to it (shown once, below).
    assert "[the answer under review," in history and '"deep"' not in history
    assert '{"depth_m": 10935}' in prompt.split("## Final answer to judge", 1)[1]


def test_tier_two_request_holds_only_required_fields(desk: Desk) -> None:
    desk.env(max_schema_retries=0, schema_fallback_model="scripted/backup")
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "no json"}]},
            {
                "model": "backup",
                "match": "(?s)simplified JSON schema.*" + re.escape(SIMPLIFIED),
                "turns": [{"content": '{"depth_m": 1}'}],
            },
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    shown = _run_with_schema(desk)
    assert json.loads(shown["attempts"][0]["final_output"]) == {"depth_m": 1}
