"""A weak judge cannot endorse (issue 28, item 2): each coherence check, alone, through the validator.

Every verdict below says ``"status": "accepted"`` and fails exactly one check, so each case proves
that check by itself: the scripted provider answers, the real ``ValidationService`` judges, and the
result must be ``insufficient_evidence`` with one ``incoherent-verdict`` warning naming the check.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.calibration import calibrate
from core.config import load_settings
from core.domain.facts import WarningCode
from core.domain.status import TaskStatus, ValidationStatus
from core.domain.validation import FailureCategory, ValidationResult
from core.store import Store
from core.validation.coherence import CoherenceCheck, contradicting_phrase, incoherence
from core.validation.warnings import read_warnings
from tests.core.conftest import ScriptFactory
from tests.core.test_validation import packet, run_validation, script

FACT = "The Mariana Trench is about 10,935 metres deep at the Challenger Deep."
CITED = [{"claim": "depth", "evidence_id": "E1", "quote": "10,935 metres", "verdict": "supported"}]
ANSWER = "About 10,935 metres."


def accepted(**changes: Any) -> str:
    """A coherent acceptance, then the one change that makes it fail a check."""
    value: dict[str, Any] = {
        "goal_achievement": "the answer gives the depth the task asked for",
        "completeness": "complete: nothing the task asked for is left out",
        "rule_compliance": "no rule was violated",
        "status": "accepted",
        "score": 0.9,
        "issues": [],
        "missing_requirements": [],
        "category": "none",
        "citations": CITED,
    }
    return json.dumps(value | changes)


async def test_a_coherent_acceptance_stays_accepted(store: Store, make_settings: ScriptFactory) -> None:
    settings = make_settings(script(accepted()))
    report, *_ = await run_validation(store, settings, packet([FACT], ANSWER))
    assert report.result.status == ValidationStatus.ACCEPTED
    assert WarningCode.INCOHERENT_VERDICT not in [w.code for w in report.warnings]
    assert "coherence_failures" not in report.debug and "downgraded_from" not in report.debug


CASES = [
    (CoherenceCheck.LOW_SCORE, {"score": 0.5}, "coherence_min_score 0.6"),
    (CoherenceCheck.ISSUES, {"issues": ["1"]}, "'1'"),
    (CoherenceCheck.MISSING_REQUIREMENTS, {"missing_requirements": ["the unit"]}, "'the unit'"),
    (CoherenceCheck.FAILURE_CATEGORY, {"category": "goal_missed"}, "failure category goal_missed"),
    (CoherenceCheck.CONTRADICTING_TEXT, {"goal_achievement": "goal_missed"}, "goal_achievement says"),
    (CoherenceCheck.CONTRADICTING_TEXT, {"completeness": "The answer is incomplete."}, "'incomplete'"),
    (CoherenceCheck.CONTRADICTING_TEXT, {"rule_compliance": "rule 2 not met"}, "'not met'"),
    (CoherenceCheck.NO_CITATIONS, {"citations": []}, "0 citation(s) of 1 evidence item(s)"),
]


@pytest.mark.parametrize(
    ("check", "change", "named"), CASES, ids=[f"{c.value}-{i}" for i, (c, _, _) in enumerate(CASES)]
)
async def test_each_check_alone_stops_an_endorsement(
    store: Store, make_settings: ScriptFactory, check: CoherenceCheck, change: dict[str, Any], named: str
) -> None:
    settings = make_settings(script(accepted(**change)))
    report, _, task_id, _ = await run_validation(store, settings, packet([FACT], ANSWER))
    assert report.result.status == ValidationStatus.INSUFFICIENT_EVIDENCE and not report.result.passed
    assert report.debug["coherence_failures"] == [check.value]
    assert report.debug["downgraded_from"] == "accepted"
    (warning,) = [w for w in report.warnings if w.code is WarningCode.INCOHERENT_VERDICT]
    assert check.value in warning.message and named in warning.message and warning.count == 1
    assert any("accepted verdict not counted" in i and check.value in i for i in report.result.issues)
    # What is stored says so too: the row's status and its warnings, as the desk and calibration read them.
    (row,) = await store.list_validations(task_id)
    assert row.status == "insufficient_evidence"
    assert WarningCode.INCOHERENT_VERDICT in [w.code for w in read_warnings(row.debug)]


async def test_the_issue_s_verdict_fails_every_check_it_breaks(
    store: Store, make_settings: ScriptFactory
) -> None:
    """The verdict a real 135M model wrote: accepted, score 0.5, issues ["1"], no citations, "goal_missed"."""
    raw = accepted(score=0.5, issues=["1"], citations=[], completeness="goal_missed")
    report, *_ = await run_validation(store, make_settings(script(raw)), packet([FACT], ANSWER))
    assert report.result.status == ValidationStatus.INSUFFICIENT_EVIDENCE
    assert report.debug["coherence_failures"] == [
        CoherenceCheck.LOW_SCORE,
        CoherenceCheck.ISSUES,
        CoherenceCheck.CONTRADICTING_TEXT,
        CoherenceCheck.NO_CITATIONS,
    ]
    (warning,) = [w for w in report.warnings if w.code is WarningCode.INCOHERENT_VERDICT]
    assert warning.count == 4


@pytest.mark.parametrize(
    ("change", "setting"),
    [
        ({"score": 0.5}, {"coherence_min_score": 0.5}),
        ({"issues": ["style could be tighter"]}, {"coherence_max_issues": 1}),
        ({"missing_requirements": ["a source year"]}, {"coherence_max_missing_requirements": 1}),
        ({"citations": []}, {"coherence_min_citations": 0}),
        ({"completeness": "incomplete"}, {"coherence_text_check": False}),
    ],
    ids=["min-score", "max-issues", "max-missing", "min-citations", "text-check-off"],
)
async def test_each_threshold_is_a_setting(
    store: Store, make_settings: ScriptFactory, change: dict[str, Any], setting: dict[str, Any]
) -> None:
    report, *_ = await run_validation(
        store, make_settings(script(accepted(**change)), **setting), packet([FACT], ANSWER)
    )
    assert report.result.status == ValidationStatus.ACCEPTED


async def test_no_citation_is_needed_when_there_is_no_evidence(
    store: Store, make_settings: ScriptFactory
) -> None:
    report, *_ = await run_validation(
        store, make_settings(script(accepted(citations=[]))), packet([], ANSWER)
    )
    assert report.result.status == ValidationStatus.ACCEPTED


async def test_a_rejection_is_never_touched(store: Store, make_settings: ScriptFactory) -> None:
    raw = accepted(status="rejected", score=0.1, issues=["wrong depth"], category="goal_missed")
    report, *_ = await run_validation(store, make_settings(script(raw)), packet([FACT], ANSWER))
    assert report.result.status == ValidationStatus.REJECTED
    assert "coherence_failures" not in report.debug


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("goal_missed", "goal_missed"),
        ("The goal was not achieved.", "not achieved"),
        ("It fails to give a unit.", "fails to"),
        ("It violates rule 3.", "violates"),
        ("The answer is incomplete", "incomplete"),
        ("no rule was violated", None),
        ("Nothing is incomplete or unsupported.", None),
        ("The answer is complete and supported.", None),
        ("This is not a refusal.", None),
    ],
)
def test_contradicting_words_and_their_negations(text: str, found: str | None) -> None:
    assert contradicting_phrase(text) == found


def test_settings_refuse_out_of_range_thresholds() -> None:
    from core.errors import ConfigurationError

    for bad in ({"coherence_min_score": 1.5}, {"coherence_max_issues": -1}, {"coherence_min_citations": -2}):
        with pytest.raises(ConfigurationError, match=next(iter(bad))):
            load_settings(**bad)


def test_checks_read_only_acceptances() -> None:
    result = ValidationResult(
        status=ValidationStatus.INSUFFICIENT_EVIDENCE, score=0.1, category=FailureCategory.INCOMPLETE
    )
    assert (
        incoherence(result, {"completeness": "incomplete"}, evidence_items=3, settings=load_settings()) == []
    )


async def test_an_incoherent_verdict_is_counted_in_calibration(
    store: Store, make_settings: ScriptFactory
) -> None:
    _, _, task_id, _ = await run_validation(
        store, make_settings(script(accepted(score=0.3))), packet([FACT], ANSWER)
    )
    (attempt,) = await store.list_attempts(task_id)
    await store.add_feedback(
        task_id=task_id,
        attempt_id=attempt.id,
        action="revise",
        prompt="give the source",
        note=None,
        reviewer="ana",
        from_status=TaskStatus.NEEDS_REVIEW,
        to_status=TaskStatus.NEEDS_REVISION,
    )
    cal = await calibrate(store)
    assert cal.matrix["insufficient_evidence"]["revised"] == 1  # not counted as an acceptance
    (figure,) = [w for w in cal.warnings if w.code == WarningCode.INCOHERENT_VERDICT]
    assert (figure.decided, figure.revised) == (1, 1)
