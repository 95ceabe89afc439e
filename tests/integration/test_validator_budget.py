"""One validator budget bounds the whole verdict and fails open (issue 14, item 5); since issue 28
``validator_timeout_s`` bounds one call and ``validator_budget_s`` the verdict."""

from __future__ import annotations

from tests.integration.conftest import Desk, verdict


def test_a_hung_validator_ends_in_validator_error_naming_the_budget(desk: Desk) -> None:
    desk.env(validator_timeout_s=60, validator_budget_s=2, llm_num_retries=2)
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides come from the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9), "delay_s": 600}]},
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert task["attempts"][0]["validation_status"] == "validator_error"
    assert task["status"] == "needs_review"
    shown = desk.cli_json("show", task["id"])
    (issue,) = shown["validations"][0]["result"]["issues"]
    assert "validator_budget_s" in issue and "budget of 2 s" in issue
    # "At most about 2 s": the recorded verdict latency, not a stopwatch in the test (the scripted
    # judge would hang 600 s; the bound is generous for a loaded machine).
    assert shown["validations"][0]["debug"]["latency_s"] < 10
