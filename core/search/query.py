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

from typing import TYPE_CHECKING

from core.search.index import DocKind, backfill, backfill_pending
from core.search.models import SearchCursor, SearchFilters, SearchHit, SearchPage, SearchQuery
from core.search.terms import MARK_END, MARK_START, RANK_LIMIT, SearchError, fts5_query, parse_terms
from core.store import search_sql

if TYPE_CHECKING:
    from core.store import Store


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

    def __init__(self, store: Store) -> None:
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
