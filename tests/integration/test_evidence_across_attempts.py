"""Evidence accumulates over a task's attempts, under ids that never change (issue 14, item 1).

The scripted validator accepts only when its request holds attempt 1's tool result, under the id
``E1`` it had in attempt 1 and labelled as attempt 1's, with the fact in it, inside the evidence
section. A retry that answers from memory without calling a tool is therefore accepted only if
the evidence really travelled.
"""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Desk, verdict

FACT = "ZETA-7781"
SEARCH = {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "vault access code"}}]}
# E1 is attempt 1's search result; the fact must sit in that item (before the next header) and the
# item must be in the evidence section, which comes before the history.
SEES_ATTEMPT_1_FACT = (
    r"(?s)## Evidence gathered by the agent.*?"
    r"\[E1\] tool result: main run / search_corpus[^\n]*\| attempt 1\n(?:(?!\n\[E2\]).)*?" + FACT + r".*?"
    r"## Recent conversation history"
)
CITE = [{"claim": "the code", "evidence_id": "E1", "quote": FACT, "verdict": "supported"}]


def _with_vault(desk: Desk) -> None:
    (desk.root / "corpus" / "vault.md").write_text(
        f"# Vault\n\nThe vault access code is {FACT}. Rotate it yearly.\n", encoding="utf-8"
    )


def _validation_prompts(shown: dict[str, Any]) -> list[str]:
    return [str(v["prompt"] or "") for v in shown["validations"]]


def test_retry_without_tools_is_judged_on_attempt_1_evidence(desk: Desk) -> None:
    _with_vault(desk)
    desk.script(
        [
            {
                "model": "agent",
                "turns": [SEARCH, {"content": "I could not find it."}, {"content": f"The code is {FACT}."}],
            },
            {
                "model": "validator",
                "match": SEES_ATTEMPT_1_FACT + r".*Final answer to judge.*" + FACT,
                "turns": [{"content": verdict("accepted", 0.9, citations=CITE)}],
            },
            {
                "model": "validator",
                "turns": [
                    {
                        "content": verdict(
                            "rejected",
                            0.1,
                            issues=["no code given"],
                            recommended_revision_prompt="Give the code.",
                        )
                    }
                ],
            },
        ]
    )
    task = desk.cli_json("run", "What is the vault access code?")
    assert [a["validation_status"] for a in task["attempts"]] == ["rejected", "accepted"]
    assert task["status"] == "awaiting_feedback"
    shown = desk.cli_json("show", task["id"])
    packets = [a["packet"] for a in shown["attempts"]]
    assert packets[1]["main_run"]["tool_results"] == []  # attempt 2 called no tool
    assert [p["evidence_id_start"] for p in packets] == [1, 3]  # E1 search, E2 attempt 1's answer
    first, second = _validation_prompts(shown)
    assert "[E1] tool result: main run / search_corpus" in first
    assert "##### Attempt 1 (an earlier attempt) #####" in second
    assert "No evidence was gathered" not in second
    debug = shown["validations"][1]["debug"]
    assert debug["tool_result_count"] == 1 and debug["evidence_attempts"] == [1, 2]
    assert debug["coverage"] == 1.0
    assert shown["validations"][1]["result"]["citations"][0]["check"] == "verified"


def test_revise_keeps_the_evidence_and_its_ids(desk: Desk) -> None:
    _with_vault(desk)
    desk.script(
        [
            {
                "model": "agent",
                "turns": [
                    SEARCH,
                    {"content": f"The code is {FACT} (from the vault note)."},
                    {"content": FACT},
                ],
            },
            {
                "model": "validator",
                "match": SEES_ATTEMPT_1_FACT,
                "turns": [{"content": verdict("accepted", 0.9, citations=CITE)}],
            },
            {"model": "validator", "turns": [{"content": verdict("insufficient_evidence", 0.3)}]},
        ]
    )
    task = desk.cli_json("run", "What is the vault access code?")
    assert task["attempts"][0]["validation_status"] == "accepted"
    revised = desk.cli_json("feedback", task["id"], "revise", "--prompt", "Give only the code.")
    assert [a["validation_status"] for a in revised["attempts"]] == ["accepted", "accepted"]
    assert [a["trigger"] for a in revised["attempts"]] == ["initial", "analyst_revision"]
    shown = desk.cli_json("show", task["id"])
    assert shown["attempts"][1]["packet"]["main_run"]["tool_results"] == []
    second = _validation_prompts(shown)[1]
    assert "[E2] final output: final output | attempt 1" in second  # attempt 1's answer, same id
    assert shown["validations"][1]["result"]["citations"][0]["check"] == "verified"
