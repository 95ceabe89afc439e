"""One table of endorsement words (issue 14, item 6)."""

from __future__ import annotations

from core.domain.labels import outcome_label
from core.domain.queue import OutcomeFilter
from core.domain.status import ValidationOutcome, ValidationStatus
from core.tasks.policy import decide
from core.tasks.state_machine import Trigger


def test_labels_say_what_happened() -> None:
    assert outcome_label(ValidationOutcome.ACCEPTED, ValidationStatus.ACCEPTED) == "accepted by validator"
    assert outcome_label("force_accepted", "rejected") == "not endorsed: rejected"
    assert outcome_label("force_accepted", "validator_error") == "not endorsed: validator error"
    assert outcome_label("force_accepted", "insufficient_evidence") == "not endorsed: insufficient evidence"
    assert outcome_label(ValidationOutcome.UNVALIDATED) == "unvalidated"
    assert outcome_label(None) == "no outcome yet"
    assert "accepted" not in outcome_label(ValidationOutcome.FORCE_ACCEPTED)


def test_policy_skip_is_unvalidated_and_rests_in_review() -> None:
    d = decide(
        status=ValidationStatus.INSUFFICIENT_EVIDENCE, skipped=True, validations_done=1, max_validations=2
    )
    assert d.outcome is ValidationOutcome.UNVALIDATED and d.trigger is Trigger.VERDICT_UNCONFIRMED
    assert OutcomeFilter.UNVALIDATED.outcomes() == (ValidationOutcome.UNVALIDATED,)
