"""Pure data: statuses, validation results, evidence. No I/O lives here.

The evidence and validation models are imported on first use, not with the package: every
``core.domain.<module>`` import runs this file first, and building the evidence models' pydantic
schemas costs more than the desk's whole first read of the queue (``core.queue_peek``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from core.domain.status import FeedbackAction, TaskStatus, ValidationOutcome, ValidationStatus

if TYPE_CHECKING:
    from core.domain.evidence import (
        NodeRunResult,
        RunEvidence,
        TaskEvidencePacket,
        TeamRunResult,
        ToolEvidence,
    )
    from core.domain.validation import (
        Citation,
        CitationCheck,
        CitationVerdict,
        FailureCategory,
        ValidationResult,
    )

_LAZY = {
    **dict.fromkeys(
        ("NodeRunResult", "RunEvidence", "TaskEvidencePacket", "TeamRunResult", "ToolEvidence"),
        "core.domain.evidence",
    ),
    **dict.fromkeys(
        ("Citation", "CitationCheck", "CitationVerdict", "FailureCategory", "ValidationResult"),
        "core.domain.validation",
    ),
}


def __getattr__(name: str) -> Any:
    """PEP 562: ``from core.domain import TaskEvidencePacket`` imports the evidence models then."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
