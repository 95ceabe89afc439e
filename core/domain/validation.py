"""The validator's verdict as the rest of the product sees it."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, computed_field

from core.domain.status import ValidationStatus


class FailureCategory(StrEnum):
    GOAL_MISSED = "goal_missed"
    INCOMPLETE = "incomplete"
    RULE_VIOLATION = "rule_violation"
    TONE_MISMATCH = "tone_mismatch"
    REFUSAL = "refusal"
    NONE = "none"


class CitationVerdict(StrEnum):
    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    UNSUPPORTED = "unsupported"


class CitationCheck(StrEnum):
    """Whether the quote the validator cited is really in the evidence item it named."""

    UNCHECKED = "unchecked"
    VERIFIED = "verified"
    QUOTE_NOT_FOUND = "quote_not_found"
    UNKNOWN_ID = "unknown_id"


class Citation(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claim: str
    evidence_id: str
    quote: str
    verdict: CitationVerdict
    check: CitationCheck = CitationCheck.UNCHECKED


class ValidationResult(BaseModel):
    """``passed`` is computed from ``status`` so the two can never disagree.

    Extra keys are ignored on input, so a model answering ``"passed": true`` next to
    ``"status": "rejected"`` cannot smuggle an acceptance in.
    """

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    status: ValidationStatus
    score: float = Field(ge=0.0, le=1.0)
    issues: list[str] = Field(default_factory=list)
    missing_requirements: list[str] = Field(default_factory=list)
    evidence_gaps: list[str] = Field(default_factory=list)
    recommended_revision_prompt: str = ""
    category: FailureCategory = FailureCategory.NONE
    citations: list[Citation] = Field(default_factory=list)
    raw_response: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        # ``==`` rather than ``is``: ``model_construct``/``model_copy(update=...)`` skip validation and may
        # leave a plain "accepted" string, which must not read as a rejection.
        return self.status == ValidationStatus.ACCEPTED
