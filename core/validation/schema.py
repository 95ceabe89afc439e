"""What the validator model is asked to return, kept apart from ``ValidationResult``.

The stored result carries fields the model must not set (``raw_response``, each citation's
``check``, the computed ``passed``); asking for this narrower shape means a model cannot mark its
own citations verified, and the three dimension fields come first in the schema so the model
writes its reasoning on each before the status.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from core.domain.status import ValidationStatus
from core.domain.validation import Citation, CitationVerdict, FailureCategory, ValidationResult

__all__ = ["ChunkFindings", "ValidatorCitation", "ValidatorOutput"]


class ValidatorCitation(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claim: str
    evidence_id: str
    quote: str
    verdict: CitationVerdict


class ValidatorOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    goal_achievement: str
    completeness: str
    rule_compliance: str
    status: Literal["accepted", "insufficient_evidence", "rejected"]
    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    issues: list[str] = Field(default_factory=list)
    missing_requirements: list[str] = Field(default_factory=list)
    evidence_gaps: list[str] = Field(default_factory=list)
    recommended_revision_prompt: str = ""
    category: FailureCategory = FailureCategory.NONE
    citations: list[ValidatorCitation] = Field(default_factory=list)

    def dimensions(self) -> dict[str, str]:
        return {
            "goal_achievement": self.goal_achievement,
            "completeness": self.completeness,
            "rule_compliance": self.rule_compliance,
        }

    def to_result(self, raw: str) -> ValidationResult:
        return ValidationResult(
            status=ValidationStatus(self.status),
            score=self.score,
            issues=self.issues,
            missing_requirements=self.missing_requirements,
            evidence_gaps=self.evidence_gaps,
            recommended_revision_prompt=self.recommended_revision_prompt,
            category=self.category,
            citations=[Citation(**c.model_dump()) for c in self.citations],
            raw_response=raw,
        )


class ChunkFindings(BaseModel):
    """Per-chunk review when the evidence does not fit one request."""

    model_config = ConfigDict(extra="ignore")

    findings: list[ValidatorCitation] = Field(default_factory=list)
    notes: str = ""
