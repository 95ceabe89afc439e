"""Domain models: the verdict cannot claim a pass its status denies, and evidence survives JSON intact."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from core.domain import (
    Citation,
    CitationCheck,
    CitationVerdict,
    FailureCategory,
    NodeRunResult,
    RunEvidence,
    TaskEvidencePacket,
    TeamRunResult,
    ToolEvidence,
    ValidationResult,
    ValidationStatus,
)

HYPO = settings(max_examples=200, deadline=None, derandomize=True)

V = ValidationStatus


@pytest.mark.parametrize("status", list(ValidationStatus))
def test_passed_is_derived_from_status(status: ValidationStatus) -> None:
    assert ValidationResult(status=status, score=0.5).passed is (status is V.ACCEPTED)


@pytest.mark.parametrize("status", [V.REJECTED, V.INSUFFICIENT_EVIDENCE, V.VALIDATOR_ERROR])
def test_passed_true_in_constructor_is_ignored(status: ValidationStatus) -> None:
    result = ValidationResult(status=status, score=1.0, passed=True)
    assert result.passed is False


def test_passed_false_in_constructor_cannot_demote_an_acceptance() -> None:
    result = ValidationResult(status=V.ACCEPTED, score=0.9, passed=False)
    assert result.passed is True


def test_model_json_claiming_pass_with_rejected_status_is_not_a_pass() -> None:
    raw = json.dumps({"status": "rejected", "passed": True, "score": 0.95, "issues": ["wrong date"]})
    result = ValidationResult.model_validate_json(raw)
    assert result.status is V.REJECTED
    assert result.passed is False
    assert result.issues == ["wrong date"]


def test_passed_cannot_be_assigned() -> None:
    result = ValidationResult(status=V.REJECTED, score=0.1)
    with pytest.raises(AttributeError, match="passed"):
        result.passed = True  # type: ignore[misc]
    assert result.passed is False


def test_status_assignment_is_validated_and_passed_follows() -> None:
    result = ValidationResult(status=V.REJECTED, score=0.1)
    result.status = "accepted"  # type: ignore[assignment]
    assert result.status is V.ACCEPTED
    assert result.passed is True
    with pytest.raises(ValidationError, match="status"):
        result.status = "approved"  # type: ignore[assignment]
    assert result.status is V.ACCEPTED


def test_unvalidated_copies_still_derive_passed_from_status() -> None:
    """``model_copy(update=)`` and ``model_construct`` skip validation; ``passed`` must still agree."""
    rejected = ValidationResult(status=V.REJECTED, score=0.1)
    assert rejected.model_copy(update={"status": "accepted"}).passed is True
    assert rejected.model_copy(update={"passed": True}).passed is False
    assert ValidationResult.model_construct(status="accepted", score=1.0).passed is True  # type: ignore[arg-type]
    assert ValidationResult.model_construct(status="rejected", score=1.0).passed is False  # type: ignore[arg-type]


def test_passed_is_serialised_but_not_part_of_the_input_schema() -> None:
    result = ValidationResult(status=V.ACCEPTED, score=1.0)
    assert json.loads(result.model_dump_json())["passed"] is True
    assert "passed" not in ValidationResult.model_json_schema(mode="validation")["properties"]
    # a dump fed back in round-trips even though it carries "passed"
    assert ValidationResult.model_validate_json(result.model_dump_json()) == result


@HYPO
@given(score=st.floats(allow_nan=False, allow_infinity=False, min_value=-10, max_value=10))
def test_score_bounds(score: float) -> None:
    if 0.0 <= score <= 1.0:
        assert ValidationResult(status=V.REJECTED, score=score).score == score
    else:
        with pytest.raises(ValidationError, match="score"):
            ValidationResult(status=V.REJECTED, score=score)


@pytest.mark.parametrize("score", [float("nan"), float("inf"), -0.0001, 1.0001])
def test_score_rejects_nan_inf_and_out_of_range(score: float) -> None:
    with pytest.raises(ValidationError, match="score"):
        ValidationResult(status=V.ACCEPTED, score=score)


def test_score_bounds_hold_on_assignment() -> None:
    result = ValidationResult(status=V.ACCEPTED, score=1.0)
    with pytest.raises(ValidationError, match="score"):
        result.score = 1.5
    assert result.score == 1.0


def test_score_is_required() -> None:
    with pytest.raises(ValidationError, match="score"):
        ValidationResult.model_validate({"status": "accepted"})


def test_unknown_status_is_rejected() -> None:
    with pytest.raises(ValidationError, match="status"):
        ValidationResult.model_validate({"status": "passed", "score": 1.0})


def test_category_enum() -> None:
    assert {c.value for c in FailureCategory} == {
        "goal_missed",
        "incomplete",
        "rule_violation",
        "tone_mismatch",
        "refusal",
        "none",
    }
    assert ValidationResult(status=V.ACCEPTED, score=1.0).category is FailureCategory.NONE
    parsed = ValidationResult.model_validate(
        {"status": "rejected", "score": 0.2, "category": "rule_violation"}
    )
    assert parsed.category is FailureCategory.RULE_VIOLATION
    with pytest.raises(ValidationError, match="category"):
        ValidationResult.model_validate({"status": "rejected", "score": 0.2, "category": "sloppy"})


def test_citation_verdict_and_check_enums() -> None:
    assert {v.value for v in CitationVerdict} == {"supported", "contradicted", "unsupported"}
    assert {c.value for c in CitationCheck} == {"unchecked", "verified", "quote_not_found", "unknown_id"}
    c = Citation.model_validate(
        {"claim": "x", "evidence_id": "E1", "quote": "q", "verdict": "contradicted", "confidence": 0.3}
    )
    assert c.verdict is CitationVerdict.CONTRADICTED
    assert c.check is CitationCheck.UNCHECKED  # the validator's word is not yet checked
    with pytest.raises(ValidationError, match="verdict"):
        Citation.model_validate({"claim": "x", "evidence_id": "E1", "quote": "q", "verdict": "likely"})


def test_validation_result_with_citations_round_trips() -> None:
    result = ValidationResult(
        status=V.INSUFFICIENT_EVIDENCE,
        score=0.4,
        issues=["no source for revenue"],
        evidence_gaps=["Q3 revenue"],
        category=FailureCategory.INCOMPLETE,
        citations=[
            Citation(
                claim="revenue grew",
                evidence_id="E2",
                quote="grew 4%",
                verdict=CitationVerdict.SUPPORTED,
                check=CitationCheck.VERIFIED,
            )
        ],
        raw_response='{"status": "insufficient_evidence"}',
    )
    back = ValidationResult.model_validate_json(result.model_dump_json())
    assert back == result
    assert back.citations[0].check is CitationCheck.VERIFIED
    assert back.passed is False


def _run(run_id: str, content: str) -> RunEvidence:
    return RunEvidence(
        run_id=run_id,
        session_id=f"s-{run_id}",
        output_text=f"answer from {run_id}",
        finish_reason="stop",
        transcript=[
            {"role": "user", "content": "question"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "search"}]},
        ],
        tool_results=[
            ToolEvidence(
                tool_name="search_corpus",
                tool_call_id="c1",
                content=content,
                event_payload={"hits": [1, 2], "query": "q", "nested": {"ok": True}},
                url="https://example.invalid/doc",
                title="Doc",
                created_at=datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
                is_error=False,
            ),
            ToolEvidence(tool_name="read_document", content="boom", is_error=True),
        ],
        warnings=["tool budget reached"],
    )


def test_task_evidence_packet_round_trips_with_nested_node_results() -> None:
    big = "é" * 5 + "x" * 200_000 + "\n\u2028end"  # nothing is truncated on the way
    packet = TaskEvidencePacket(
        task_id="t-1",
        attempt_index=2,
        main_run=_run("main", "main evidence"),
        team_runs=[_run("n1", big)],
        team_node_results=[
            NodeRunResult(
                node_id="n1",
                role="researcher",
                status="succeeded",
                finish_reason="stop",
                output_text="found it",
                evidence=_run("n1", big),
            ),
            NodeRunResult(node_id="n2", status="failed", error="timeout after 120 s"),
        ],
        final_output="the synthesis",
    )
    text = packet.model_dump_json()
    back = TaskEvidencePacket.model_validate_json(text)
    assert back == packet
    node = back.team_node_results[0]
    assert node.evidence is not None
    assert node.evidence.tool_results[0].content == big
    assert node.evidence.tool_results[0].created_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert node.evidence.tool_results[0].event_payload["nested"] == {"ok": True}
    assert back.team_node_results[1].evidence is None
    assert back.team_node_results[1].error == "timeout after 120 s"
    # and the JSON itself is stable: dumping the parsed copy gives the same text
    assert back.model_dump_json() == text


def test_team_run_result_run_evidence_skips_nodes_without_evidence() -> None:
    team = TeamRunResult(
        plan_id="p",
        mode="parallel",
        node_results=[
            NodeRunResult(node_id="a", status="succeeded", evidence=_run("a", "A")),
            NodeRunResult(node_id="b", status="skipped"),
            NodeRunResult(node_id="c", status="succeeded", evidence=_run("c", "C")),
        ],
    )
    assert [r.run_id for r in team.run_evidence] == ["a", "c"]
    assert TeamRunResult.model_validate_json(team.model_dump_json()) == team
