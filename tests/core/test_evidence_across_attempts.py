"""Task-wide evidence ids and the accumulated packet (issue 14, item 1), below the command line."""

from __future__ import annotations

import json

from core.domain import RunEvidence, TaskEvidencePacket, ToolEvidence
from core.domain.status import ValidationStatus
from core.evidence import evidence_char_length, next_evidence_number, render_packet, render_task
from core.store import Store
from tests.core.conftest import ScriptFactory
from tests.core.test_validation import run_validation, verdict


def attempt(index: int, contents: list[str], answer: str, start: int | None) -> TaskEvidencePacket:
    run = RunEvidence(
        run_id=f"run-{index}",
        session_id="sess-1",
        output_text=answer,
        finish_reason="stop",
        tool_results=[
            ToolEvidence(tool_name="lookup", tool_call_id=f"call_{index}_{i}", content=c)
            for i, c in enumerate(contents)
        ],
    )
    return TaskEvidencePacket(
        task_id="t", attempt_index=index, main_run=run, final_output=answer, evidence_id_start=start
    )


def test_ids_continue_across_attempts_and_never_change() -> None:
    first = attempt(1, ["alpha", "beta"], "answer one", start=1)
    assert next_evidence_number([first]) == 4  # two results and the answer
    second = attempt(2, ["gamma"], "answer two", start=next_evidence_number([first]))
    alone = {i.evidence_id: i.content for i in render_packet(second).items}
    assert alone == {"E4": "gamma", "E5": "answer two"}
    together = render_task([first, second])
    assert [(i.evidence_id, i.attempt_index, i.content) for i in together.items] == [
        ("E1", 1, "alpha"),
        ("E2", 1, "beta"),
        ("E3", 1, "answer one"),
        ("E4", 2, "gamma"),
    ]
    assert {i.evidence_id: i.content for i in render_packet(first).items} == {
        "E1": "alpha",
        "E2": "beta",
        "E3": "answer one",
    }
    assert (
        "| attempt 1" in together.text and "##### Attempt 2 (the attempt under review) #####" in together.text
    )
    assert evidence_char_length([first, second]) == sum(
        len(c) for c in ["alpha", "beta", "answer one"]
    ) + len("gamma") + len("answer two")


def test_packets_from_before_task_wide_ids_are_numbered_in_sequence() -> None:
    old = [attempt(1, ["a"], "x", start=None), attempt(2, ["b"], "y", start=None)]
    ids = [i.evidence_id for i in render_task(old, include_last_final_output=True).items]
    assert ids == ["E1", "E2", "E3", "E4"]


async def test_chunked_validation_covers_earlier_attempts(store: Store, make_settings: ScriptFactory) -> None:
    early = [f"EARLY-{i:02d}-START " + "lorem ipsum " * 250 + f" EARLY-{i:02d}-END" for i in range(6)]
    first = attempt(1, early, "first answer", start=1)
    second = attempt(2, ["LATE-ONLY"], "The answer is 42.", start=next_evidence_number([first]))
    conversations = [
        {
            "model": "validator",
            "match": "Findings from the evidence chunks",
            "turns": [{"content": verdict()}],
        },
        {"model": "validator", "turns": [{"content": json.dumps({"findings": [], "notes": ""})}]},
    ]
    # accepted without citations: this test reads the prompts, not the endorsement
    settings = make_settings(conversations, validator_context_tokens=3000, coherence_min_citations=0)
    report, gateway, _, _ = await run_validation(store, settings, second, earlier=[first])
    texts = gateway.user_texts()
    chunk_texts, verdict_text = texts[:-1], texts[-1]
    assert report.debug["strategy"] == "chunked" and len(chunk_texts) > 1
    for i in range(6):
        holders = [
            t
            for t in chunk_texts
            if f"[E{i + 1}] tool result: main run / lookup (call_1_{i}) | attempt 1" in t
        ]
        assert len(holders) == 1 and f"EARLY-{i:02d}-END" in holders[0]
    assert any("[E8] tool result: main run / lookup (call_2_0) | attempt 2" in t for t in chunk_texts)
    assert "- E1: main run / lookup (call_1_0) (attempt 1," in verdict_text
    # The verdict step carries the same sections as a single-pass prompt, in the same order.
    order = [
        "## Task",
        "## Findings",
        "## Recent conversation",
        "## Execution metadata",
        "## Previous feedback",
    ]
    positions = [verdict_text.index(h) for h in [*order, "## Final answer to judge", "## Output"]]
    assert positions == sorted(positions)
    metadata = verdict_text.split("## Execution metadata", 1)[1].split("## Previous feedback", 1)[0]
    assert "Attempt 1 (an earlier attempt):" in metadata and "lookup ×6" in metadata
    assert "Attempt 2 (the attempt under review):" in metadata and "lookup ×1" in metadata
    assert report.debug["coverage"] == 1.0 and report.result.status == ValidationStatus.ACCEPTED
