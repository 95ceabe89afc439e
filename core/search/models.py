"""The search's typed query and results, with no database.

Apart from ``core.search.query`` (the service that asks the store) because the store's search SQL
reads these shapes: kept together, the store and the search service imported each other.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from core.search.index import DocKind


class SearchFilters(BaseModel):
    kinds: tuple[DocKind, ...] = ()
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    max_score: float | None = Field(default=None, ge=0.0, le=1.0)
    category: str | None = None
    outcome: str | None = None  # a validation outcome, or "none" for tasks without one
    status: str | None = None
    reviewer: str | None = None  # decided by, or holding a claim on, the task
    batch_id: str | None = None
    since: datetime | None = None  # the passage's date: attempt finished, note recorded, task created
    until: datetime | None = None


class SearchCursor(BaseModel):
    rank: float
    doc_id: int
    ranked: bool = True  # the pages continue in the order the first page chose


class SearchQuery(BaseModel):
    text: str
    filters: SearchFilters = Field(default_factory=SearchFilters)
    limit: int = Field(default=50, ge=1, le=1000)
    after: SearchCursor | None = None


class SearchHit(BaseModel):
    task_id: str
    title: str
    status: str
    kind: DocKind
    attempt_index: int | None
    ref: str  # evidence id, "issue 2", "note <feedback id>", "verdict <event id>", or ""
    segment: int
    passage: str  # plain text
    marks: list[tuple[int, int]]  # [start, end) of each matched stretch in ``passage``
    terms: list[str]  # what was searched for, for find-in-document highlighting
    rank: float
    doc_id: int

    def marked(self, start: str = "«", end: str = "»") -> str:
        """The passage with every match between ``start`` and ``end`` (for terminals)."""
        out, pos = [], 0
        for a, b in self.marks:
            out += [self.passage[pos:a], start, self.passage[a:b], end]
            pos = b
        out.append(self.passage[pos:])
        return "".join(out)


class SearchPage(BaseModel):
    hits: list[SearchHit]
    more: SearchCursor | None
    ranked: bool = True  # False: more than RANK_LIMIT passages match, newest first
