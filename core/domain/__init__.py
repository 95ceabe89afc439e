"""Pure data: statuses, validation results, evidence. No I/O lives here."""

from core.domain.evidence import (
    NodeRunResult,
    RunEvidence,
    TaskEvidencePacket,
    TeamRunResult,
    ToolEvidence,
)
from core.domain.status import FeedbackAction, TaskStatus, ValidationOutcome, ValidationStatus
from core.domain.validation import (
    Citation,
    CitationCheck,
    CitationVerdict,
    FailureCategory,
    ValidationResult,
)

__all__ = [
    "Citation",
    "CitationCheck",
    "CitationVerdict",
    "FailureCategory",
    "FeedbackAction",
    "NodeRunResult",
    "RunEvidence",
    "TaskEvidencePacket",
    "TaskStatus",
    "TeamRunResult",
    "ToolEvidence",
    "ValidationOutcome",
    "ValidationResult",
    "ValidationStatus",
]
