"""Whether an ``accepted`` verdict is coherent enough to count as an endorsement.

A weak judge (a small local model) often writes ``"status": "accepted"`` next to a low score, a
list of issues, a failure category or its own words saying the goal was missed. Taking such a
verdict at its status would endorse an answer the judge itself found wanting, so before
``accepted`` counts it must pass every check below; a verdict that fails one is recorded as
``insufficient_evidence`` (the analyst decides) with an ``incoherent-verdict`` warning naming the
checks it failed. Each check and its setting is documented in the README ("A weak judge cannot
endorse"). Pure functions: no I/O, no model calls.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from core.domain.facts import VerdictWarning, WarningCode
from core.domain.status import ValidationStatus
from core.domain.validation import FailureCategory, ValidationResult

__all__ = [
    "CoherenceCheck",
    "CoherenceSettings",
    "Incoherence",
    "contradicting_phrase",
    "incoherence",
    "incoherence_warning",
]


class CoherenceCheck(StrEnum):
    """The name of each check, as the warning and the debug record spell it."""

    LOW_SCORE = "low-score"
    ISSUES = "issues-present"
    MISSING_REQUIREMENTS = "missing-requirements"
    FAILURE_CATEGORY = "failure-category"
    CONTRADICTING_TEXT = "contradicting-text"
    NO_CITATIONS = "no-citations"


class CoherenceSettings(Protocol):
    """What the checks read of the settings (``core.config.Settings`` satisfies it)."""

    @property
    def coherence_min_score(self) -> float: ...
    @property
    def coherence_max_issues(self) -> int: ...
    @property
    def coherence_max_missing_requirements(self) -> int: ...
    @property
    def coherence_min_citations(self) -> int: ...
    @property
    def coherence_text_check(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Incoherence:
    """One failed check and what in the verdict failed it."""

    check: CoherenceCheck
    detail: str

    def describe(self) -> str:
        return f"{self.check.value} ({self.detail})"


# Words by which a verdict's own dimension texts say the answer failed. A single word counts only
# when no negation stands up to three words before it ("no rule was violated" is not a violation), so these
# are deliberately few and unambiguous; the category names are matched as the judge wrote them.
_CATEGORY_WORDS = (
    *(c.value for c in FailureCategory if "_" in c.value),
    "goal missed",
    "goal was missed",
    "missed the goal",
)
_FAILING_PHRASES = (
    "not achieved",
    "not met",
    "not fulfilled",
    "not satisfied",
    "not answered",
    "not addressed",
    "not complete",
    "does not answer",
    "doesn't answer",
    "did not answer",
    "does not address",
    "fails to",
    "failed to",
)
_FAILING_WORDS = (
    "incomplete",
    "refusal",
    "violates",
    "violated",
    "unsupported",
    "fabricated",
    "hallucinated",
)
_NEGATION = re.compile(
    r"\b(?:no|not|never|nothing|none|without|isn't|wasn't|aren't|doesn't|didn't|don't)\W+(?:[\w']+\W+){0,3}$"
)


def contradicting_phrase(text: str) -> str | None:
    """The first phrase in ``text`` saying the answer failed, or None."""
    lowered = " ".join(text.lower().split())
    for phrase in (*_CATEGORY_WORDS, *_FAILING_PHRASES):
        if re.search(rf"(?<![\w]){re.escape(phrase)}(?![\w])", lowered):
            return phrase
    for word in _FAILING_WORDS:
        for found in re.finditer(rf"(?<![\w]){re.escape(word)}(?![\w])", lowered):
            if _NEGATION.search(lowered[: found.start()]) is None:
                return word
    return None


def incoherence(
    result: ValidationResult,
    dimensions: Mapping[str, str],
    *,
    evidence_items: int,
    settings: CoherenceSettings,
) -> list[Incoherence]:
    """Every check an ``accepted`` verdict fails; empty for a coherent one or any other status.

    ``dimensions`` are the judge's own texts (goal achievement, completeness, rule compliance);
    ``evidence_items`` is how many evidence items it was shown (citations are required only then).
    """
    if result.status != ValidationStatus.ACCEPTED:
        return []
    failed: list[Incoherence] = []
    if result.score < settings.coherence_min_score:
        failed.append(
            Incoherence(
                CoherenceCheck.LOW_SCORE,
                f"score {result.score:g} is below coherence_min_score {settings.coherence_min_score:g}",
            )
        )
    issues = [i for i in result.issues if i.strip()]
    if len(issues) > settings.coherence_max_issues:
        failed.append(
            Incoherence(
                CoherenceCheck.ISSUES,
                f"{len(issues)} issue(s) listed, more than coherence_max_issues "
                f"{settings.coherence_max_issues}: {_quoted(issues)}",
            )
        )
    missing = [m for m in result.missing_requirements if m.strip()]
    if len(missing) > settings.coherence_max_missing_requirements:
        failed.append(
            Incoherence(
                CoherenceCheck.MISSING_REQUIREMENTS,
                f"{len(missing)} missing requirement(s), more than coherence_max_missing_requirements "
                f"{settings.coherence_max_missing_requirements}: {_quoted(missing)}",
            )
        )
    if result.category != FailureCategory.NONE:
        failed.append(
            Incoherence(CoherenceCheck.FAILURE_CATEGORY, f"failure category {result.category.value}")
        )
    if settings.coherence_text_check:
        for name, text in dimensions.items():
            phrase = contradicting_phrase(text)
            if phrase is not None:
                failed.append(Incoherence(CoherenceCheck.CONTRADICTING_TEXT, f"{name} says {phrase!r}"))
                break
    if evidence_items and len(result.citations) < settings.coherence_min_citations:
        failed.append(
            Incoherence(
                CoherenceCheck.NO_CITATIONS,
                f"{len(result.citations)} citation(s) of {evidence_items} evidence item(s), fewer than "
                f"coherence_min_citations {settings.coherence_min_citations}",
            )
        )
    return failed


def incoherence_warning(failed: list[Incoherence]) -> VerdictWarning:
    """One warning for the verdict (one badge), naming every check it failed."""
    return VerdictWarning(
        code=WarningCode.INCOHERENT_VERDICT,
        message="the validator said accepted but its verdict failed "
        + "; ".join(f.describe() for f in failed)
        + ": recorded as insufficient evidence",
        count=len(failed),
    )


def _quoted(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(repr(i[:80]) for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
