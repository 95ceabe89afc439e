"""The verifier context's own sections and the history's pointers, below the command line (issue 14)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.domain import RunEvidence, TaskEvidencePacket, TeamRunResult
from core.domain.evidence import NodeRunResult
from core.domain.facts import NodeStatus
from core.domain.records import FeedbackRecord, ValidationRecord
from core.team.synthesis import SYNTHESIS_INSTRUCTIONS, build_synthesis_message, synthesis_without_evidence
from core.validation.context import execution_metadata, previous_feedback
from core.validation.prompt import format_history

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _team() -> TeamRunResult:
    run = RunEvidence(run_id="r-n", session_id="s-n", output_text="NODE-OUTPUT-XYZ", finish_reason="stop")
    node = NodeRunResult(
        node_id="n1", status=NodeStatus.SUCCEEDED, output_text="NODE-OUTPUT-XYZ", evidence=run
    )
    return TeamRunResult(plan_id="p", mode="parallel", node_results=[node], warnings=["a warning"])


def test_synthesis_request_keeps_task_and_instructions_but_not_the_evidence() -> None:
    message = build_synthesis_message(
        task_text="TASK-TEXT", team=_team(), task_id="t", attempt_index=2, evidence_id_start=7
    )
    assert "[E7] node output: team node 'n1'" in message["content"]
    stripped = synthesis_without_evidence(message["content"], "[POINTER]")
    assert stripped is not None and "NODE-OUTPUT-XYZ" not in stripped
    assert stripped.startswith("Task:\nTASK-TEXT") and stripped.endswith(SYNTHESIS_INSTRUCTIONS)
    assert "Team evidence (plan 'p', mode parallel): [POINTER]" in stripped
    for other in ("Task:\nno evidence here", "hello", f"Task:\nx\n\n{SYNTHESIS_INSTRUCTIONS}"):
        assert synthesis_without_evidence(other, "[POINTER]") is None
    history = [
        message,
        {"role": "assistant", "content": "EARLIER-ANSWER"},
        {"role": "user", "content": "go on"},
    ]
    text, count = format_history(history, evidence_texts={"EARLIER-ANSWER": "E9"})
    assert count == 3 and "NODE-OUTPUT-XYZ" not in text and "EARLIER-ANSWER" not in text
    assert "[answer recorded as evidence E9, 14 characters: see the evidence]" in text and "go on" in text


def test_metadata_is_there_without_evidence_and_says_what_was_not_recorded() -> None:
    legacy = TaskEvidencePacket(
        task_id="t", attempt_index=1, main_run=RunEvidence(run_id="r1", session_id="s", finish_reason="stop")
    )
    empty = TaskEvidencePacket(task_id="t", attempt_index=2)
    text = execution_metadata([legacy, empty])
    assert "Attempt 1 (an earlier attempt):\n- main run: finish reason `stop`, duration not recorded" in text
    assert "0 tool calls, tokens not recorded" in text and "- no answer was produced" in text
    assert "Attempt 2 (the attempt under review):\n- main run: no run was recorded" in text


def _verdict(index: int, status: str, minutes: int) -> ValidationRecord:
    result = {"issues": [f"ISSUE-{index}"], "recommended_revision_prompt": f"REVISE-{index}"}
    return ValidationRecord(
        id=f"v{index}",
        task_id="t",
        attempt_id=f"a{index}",
        attempt_index=index,
        status=status,
        score=0.25,
        category="goal_missed",
        result=result,
        raw_response="",
        prompt=None,
        debug={},
        created_at=T0 + timedelta(minutes=minutes),
    )


def test_previous_feedback_holds_every_earlier_verdict_and_revision_in_order() -> None:
    verdicts = [_verdict(1, "rejected", 1), _verdict(2, "accepted", 3), _verdict(3, "rejected", 5)]
    revise = FeedbackRecord(
        id="f",
        task_id="t",
        attempt_id="a2",
        action="revise",
        prompt="ANALYST-ASK",
        note=None,
        reviewer="ana",
        from_status="awaiting_feedback",
        to_status="needs_revision",
        created_at=T0 + timedelta(minutes=4),
    )
    ids = {"a1": 1, "a2": 2, "a3": 3}
    text = previous_feedback(verdicts, [revise], attempt_index=3, attempt_ids=ids)
    assert text.startswith('<EXTERNAL-CONTENT label="previous-feedback">')
    marks = [
        "Attempt 1: validator verdict `rejected`",
        "REVISE-1",
        "Attempt 2:",
        "Analyst after attempt 2",
        "ANALYST-ASK",
    ]
    positions = [text.index(m) for m in marks]
    assert positions == sorted(positions)
    assert "ISSUE-3" not in text and "category `goal_missed`" in text
    assert previous_feedback(verdicts, [revise], attempt_index=1, attempt_ids=ids) == ""
