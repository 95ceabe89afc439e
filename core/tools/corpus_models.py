"""What the corpus answers with: refresh statistics, search hits and document pages.

Apart from ``corpus.py`` (the index itself) so that file stays small. Paths here are relative to
the corpus root and documents are named by a ``corpus:`` URL plus their content hash: evidence
leaves the machine in bundles and reports, and the analyst's home folder must not go with it.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote

from pydantic import BaseModel, Field

CORPUS_SCHEME = "corpus:"


def content_hash(text: str) -> str:
    """sha256 of a document's indexed text: names exactly what the agent read, wherever it lives."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corpus_url(document_id: str) -> str:
    """``corpus:notes/tides.md``: a document named relative to the corpus root, never ``file:///home/...``."""
    return CORPUS_SCHEME + quote(document_id, safe="/")


class RefreshStats(BaseModel):
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    warnings: list[str] = Field(default_factory=list)
    rebuilt: bool = False


class SearchHit(BaseModel):
    document_id: str
    title: str
    path: str  # relative to the corpus root
    snippet: str
    score: float  # bm25: lower is better; kept so callers can show or compare relevance
    offset: int = 0  # character offset of the best-matching passage, for read_document
    length: int = 0  # that passage's length in characters
    sha256: str = ""


class DocumentPage(BaseModel):
    document_id: str
    title: str
    path: str  # relative to the corpus root
    url: str  # corpus:RELATIVE/PATH
    sha256: str  # of the whole document's indexed text
    text: str
    offset: int
    total_length: int
    next_offset: int | None


__all__ = ["DocumentPage", "RefreshStats", "SearchHit", "content_hash", "corpus_url"]
