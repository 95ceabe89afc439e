"""The words every reader uses for an answer's endorsement: one table for the CLI, reports and desk.

``force_accepted`` stays the stored value (seed 001's compatibility), but read on its own it
sounds like "accepted"; the label says what actually happened (the validator rejected it, could
not confirm it, or failed), so no view ever presents an unendorsed answer as endorsed.
"""

from __future__ import annotations

from core.domain.status import ValidationOutcome, ValidationStatus

__all__ = ["NOT_ENDORSED", "NO_OUTCOME", "OUTCOME_LABELS", "VERDICT_NOT_ENDORSED", "outcome_label"]

NOT_ENDORSED = "not endorsed"
NO_OUTCOME = "no outcome yet"

OUTCOME_LABELS: dict[ValidationOutcome, str] = {
    ValidationOutcome.ACCEPTED: "accepted by validator",
    ValidationOutcome.FORCE_ACCEPTED: NOT_ENDORSED,
    ValidationOutcome.UNVALIDATED: "unvalidated",
}

# Why a delivered answer is not endorsed, by the last verdict it got.
VERDICT_NOT_ENDORSED: dict[ValidationStatus, str] = {
    ValidationStatus.REJECTED: "not endorsed: rejected",
    ValidationStatus.VALIDATOR_ERROR: "not endorsed: validator error",
    ValidationStatus.INSUFFICIENT_EVIDENCE: "not endorsed: insufficient evidence",
    # accepted by the validator but delivered unendorsed: the declared output schema was not met
    ValidationStatus.ACCEPTED: "not endorsed: output schema not met",
}


def outcome_label(
    outcome: ValidationOutcome | str | None, validation_status: ValidationStatus | str | None = None
) -> str:
    """The label of an outcome, made specific by the verdict behind it when there is one."""
    if outcome is None:
        return NO_OUTCOME
    outcome = ValidationOutcome(outcome)
    if outcome is ValidationOutcome.FORCE_ACCEPTED and validation_status is not None:
        return VERDICT_NOT_ENDORSED[ValidationStatus(validation_status)]
    return OUTCOME_LABELS[outcome]
