"""Mechanical check that each quote the validator cites is really in the evidence item it names.

A judge can invent a quote as easily as an agent can invent a fact; matching is whitespace-,
case- and quote-mark-insensitive so reformatting does not count as invention.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from core.domain.validation import Citation, CitationCheck
from core.evidence.wrapping import neutralise

__all__ = ["check_citations", "normalise_id", "normalise_quote"]

_SPACE = re.compile(r"\s+")
_QUOTE_MARKS = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " "})


def normalise_quote(text: str) -> str:
    return _SPACE.sub(" ", text.translate(_QUOTE_MARKS).casefold()).strip()


def normalise_id(evidence_id: str) -> str:
    return evidence_id.strip().strip("[]()").strip().upper()


def check_citations(citations: list[Citation], contents: Mapping[str, str]) -> list[Citation]:
    """Return copies with ``check`` set; ``contents`` maps evidence ids to the item's full content."""
    cache: dict[str, tuple[str, str]] = {}
    checked: list[Citation] = []
    for citation in citations:
        key = normalise_id(citation.evidence_id)
        if key not in contents:
            checked.append(citation.model_copy(update={"check": CitationCheck.UNKNOWN_ID}))
            continue
        if key not in cache:
            raw = contents[key]
            cache[key] = (normalise_quote(raw), normalise_quote(neutralise(raw)))
        quote = normalise_quote(citation.quote)
        found = bool(quote) and any(quote in text for text in cache[key])
        check = CitationCheck.VERIFIED if found else CitationCheck.QUOTE_NOT_FOUND
        checked.append(citation.model_copy(update={"check": check}))
    return checked
