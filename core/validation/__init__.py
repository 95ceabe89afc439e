"""Evidence-grounded validation: the product's judge (see ``service`` for the policy).

Names load on first use (PEP 562): importing one light module such as ``warnings`` must not
pull in the validation service, its LLM gateway and the agent, which the desk's first paint
does not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.validation.chunking import plan_chunks, split_item
    from core.validation.citations import check_citations, normalise_quote
    from core.validation.schema import ChunkFindings, ValidatorCitation, ValidatorOutput
    from core.validation.service import ValidationReport, ValidationService, token_budget
    from core.validation.warnings import legacy_warning, read_warnings

_HOMES = {
    "ChunkFindings": "core.validation.schema",
    "ValidationReport": "core.validation.service",
    "ValidationService": "core.validation.service",
    "ValidatorCitation": "core.validation.schema",
    "ValidatorOutput": "core.validation.schema",
    "check_citations": "core.validation.citations",
    "legacy_warning": "core.validation.warnings",
    "normalise_quote": "core.validation.citations",
    "plan_chunks": "core.validation.chunking",
    "read_warnings": "core.validation.warnings",
    "split_item": "core.validation.chunking",
    "token_budget": "core.validation.service",
}


__getattr__ = lazy_exports(__name__, _HOMES, globals())


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
