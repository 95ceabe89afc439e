"""Asking the search index: a typed query in, ranked hits with their passage out.

The query language is small on purpose: words (all must appear), ``"quoted phrases"`` (the words
in that order) and ``word*`` (a word prefix). The same ``SearchQuery`` is turned into an FTS5
``MATCH`` on SQLite and a ``tsquery`` on PostgreSQL, so a saved view means the same on both.
Hits come ranked (bm25 on SQLite, ``ts_rank`` on PostgreSQL, best first) in keyset pages: the
cursor is the last hit's (rank, document id), so "more" costs a page, not an offset.

A hit's passage is the engine's own excerpt (FTS5 ``snippet()``, ``ts_headline``) with the matched
words between two private-use characters, turned here into plain text plus spans: no markup
ever travels to a view that might interpret it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from core.search.index import DocKind, backfill, backfill_pending
from core.search.terms import MARK_END, MARK_START, RANK_LIMIT, SearchError, fts5_query, parse_terms
from core.store import search_sql


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


def _split_marks(raw: str) -> tuple[str, list[tuple[int, int]]]:
    out: list[str] = []
    marks: list[tuple[int, int]] = []
    pos = 0
    start: int | None = None
    for ch in raw:
        if ch == MARK_START:
            start = pos
        elif ch == MARK_END:
            if start is not None and pos > start:
                marks.append((start, pos))
            start = None
        else:
            out.append(ch)
            pos += 1
    return " ".join("".join(out).split("\n")), marks


class SearchService:
    """The one read path for search; the desk and the CLI both ask it. Not bound to Qt."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._backfill_checked = False

    async def ensure_backfilled(self) -> None:
        """Run the backfill a migrated workspace left pending, once per process."""
        if self._backfill_checked:
            return
        if await backfill_pending(self.store):
            await backfill(self.store)
        self._backfill_checked = True

    async def search(self, query: SearchQuery) -> SearchPage:
        await self.ensure_backfilled()
        phrases, prefixes = parse_terms(query.text)
        ranked = (
            query.after.ranked
            if query.after is not None
            else await search_sql.few_matches(self.store, query.text)
        )
        if self.store.is_sqlite:
            rows = await search_sql.sqlite_hits(self.store, query, ranked)
        else:
            rows = await search_sql.pg_hits(self.store, query, ranked)
        terms = phrases + prefixes
        hits = []
        for r in rows[: query.limit]:
            passage, marks = _split_marks(r["passage"] or "")
            hits.append(
                SearchHit(
                    task_id=r["task_id"],
                    title=r["title"],
                    status=r["status"],
                    kind=DocKind(r["kind"]),
                    attempt_index=r["attempt_index"],
                    ref=r["ref"],
                    segment=r["seg"],
                    passage=passage,
                    marks=marks,
                    terms=terms,
                    rank=float(r["rank"]),
                    doc_id=int(r["id"]),
                )
            )
        more = (
            SearchCursor(rank=hits[-1].rank, doc_id=hits[-1].doc_id, ranked=ranked)
            if len(rows) > query.limit
            else None
        )
        return SearchPage(hits=hits, more=more, ranked=ranked)


__all__ = [
    "SearchCursor",
    "SearchError",
    "SearchFilters",
    "SearchHit",
    "SearchPage",
    "SearchQuery",
    "SearchService",
    "fts5_query",
    "parse_terms",
]

_ = (MARK_END, MARK_START, RANK_LIMIT)  # re-exported: the desk and the bench read them from here
