"""Evidence-grounded validation: the product's judge (see ``service`` for the policy)."""

from core.validation.chunking import plan_chunks, split_item
from core.validation.citations import check_citations, normalise_quote
from core.validation.schema import ChunkFindings, ValidatorCitation, ValidatorOutput
from core.validation.service import ValidationReport, ValidationService, token_budget
from core.validation.warnings import legacy_warning, read_warnings

__all__ = [
    "ChunkFindings",
    "ValidationReport",
    "ValidationService",
    "ValidatorCitation",
    "ValidatorOutput",
    "check_citations",
    "legacy_warning",
    "normalise_quote",
    "plan_chunks",
    "read_warnings",
    "split_item",
    "token_budget",
]
