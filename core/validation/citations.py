"""Mechanical check that each quote the validator cites is really in the evidence item it names.

A judge can invent a quote as easily as an agent can invent a fact; matching is whitespace-,
case- and quote-mark-insensitive so reformatting does not count as invention.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from core.domain.validation import Citation, CitationCheck
from core.evidence.content import ContentReader, iter_item_text
from core.evidence.render import EvidenceItem
from core.evidence.wrapping import neutralise

__all__ = ["check_citations", "check_citations_streaming", "find_quotes", "normalise_id", "normalise_quote"]

_SPACE = re.compile(r"\s+")
_QUOTE_MARKS = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " "})


def _normalise_run(text: str) -> str:
    """The normal form without the final strip: normalising ``tail + piece`` equals normalising the
    whole text up to that point (every rule is per character except the whitespace runs, and a
    run cut by a piece boundary is joined again with the tail)."""
    return _SPACE.sub(" ", text.translate(_QUOTE_MARKS).casefold())


def normalise_quote(text: str) -> str:
    return _normalise_run(text).strip()


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


async def find_quotes(store: ContentReader, item: EvidenceItem, quotes: Sequence[str]) -> set[str]:
    """Which of the (normalised, non-empty) ``quotes`` occur in the item, reading it piece by piece.

    Each piece is searched together with the last ``len(quote) - 1`` normalised characters before
    it, so a quote that straddles a stored-chunk boundary is found and the item is never joined:
    memory is one piece (1 Mi characters) whatever the item's size. The neutralised copy (what the
    validator read inside the fence) is searched the same way; a forged fence tag cut exactly by a
    piece boundary is neutralised in neither piece, so a quote of that rewritten tag alone can
    be missed there (it is still found as written).
    """
    wanted = {q for q in quotes if q}
    if not wanted:
        return set()
    keep = max(len(q) for q in wanted) - 1
    found: set[str] = set()
    tails = ["", ""]
    async for piece in iter_item_text(store, item):
        for variant, raw in enumerate((piece, neutralise(piece))):
            window = _normalise_run(tails[variant] + raw)
            found.update(q for q in wanted - found if q in window)
            tails[variant] = window[max(0, len(window) - keep) :] if keep > 0 else ""
        if found == wanted:
            break
    return found


async def check_citations_streaming(
    citations: list[Citation], items: Sequence[EvidenceItem], store: ContentReader
) -> list[Citation]:
    """``check_citations`` over items read as an index: each cited item is scanned once, streamed."""
    by_id = {normalise_id(item.evidence_id): item for item in items}
    quotes: dict[str, set[str]] = {}
    for citation in citations:
        key = normalise_id(citation.evidence_id)
        if key in by_id:
            quotes.setdefault(key, set()).add(normalise_quote(citation.quote))
    present = {key: await find_quotes(store, by_id[key], sorted(qs)) for key, qs in quotes.items()}
    checked: list[Citation] = []
    for citation in citations:
        key = normalise_id(citation.evidence_id)
        if key not in by_id:
            check = CitationCheck.UNKNOWN_ID
        else:
            quote = normalise_quote(citation.quote)
            check = (
                CitationCheck.VERIFIED if quote and quote in present[key] else CitationCheck.QUOTE_NOT_FOUND
            )
        checked.append(citation.model_copy(update={"check": check}))
    return checked
