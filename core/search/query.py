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

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Float, and_, bindparam, exists, func, literal_column, or_, select, true
from sqlalchemy import text as sql_text
from sqlalchemy.sql.elements import ColumnElement

from core.search.index import DocKind, backfill, backfill_pending
from core.store.base import StoreBase
from core.store.models import ClaimRow, FeedbackRow, SearchDocRow, TaskRow

MARK_START = "\ue000"
MARK_END = "\ue001"
_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')
_WORD = re.compile(r"[^\W_]+")
# Ranking costs a score per matching passage (~3 s for 600,000 on SQLite); beyond this many
# matches hits come newest first, which the index answers in the time of a page.
RANK_LIMIT = 20_000
_HEADLINE = f'StartSel="{MARK_START}", StopSel="{MARK_END}", MaxWords=30, MinWords=12, MaxFragments=1'


class SearchError(ValueError):
    """A query that cannot be asked (nothing to search for); the message says what to type."""


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


def parse_terms(text: str) -> tuple[list[str], list[str]]:
    """(phrases, prefixes) of a typed query; a bare word is a one-word phrase."""
    phrases: list[str] = []
    prefixes: list[str] = []
    for quoted, bare in _TOKEN.findall(text):
        if quoted.strip():
            phrases.append(" ".join(quoted.split()))
        elif bare:
            word = bare.strip('"')
            if word.endswith("*") and _WORD.search(word[:-1]):
                prefixes.append(word[:-1])
            elif _WORD.search(word):
                phrases.append(word)
    if not phrases and not prefixes:
        raise SearchError("type a word or a quoted phrase to search for")
    return phrases, prefixes


def fts5_query(text: str) -> str:
    phrases, prefixes = parse_terms(text)
    quoted = ['"' + p.replace('"', '""') + '"' for p in phrases]
    quoted += ['"' + p.replace('"', '""') + '"*' for p in prefixes]
    return " ".join(quoted)


def _pg_tsquery(text: str) -> ColumnElement[Any]:
    phrases, prefixes = parse_terms(text)
    parts: list[ColumnElement[Any]] = [func.phraseto_tsquery(literal_column("'simple'"), p) for p in phrases]
    for p in prefixes:
        words = _WORD.findall(p.lower())
        lexemes = " <-> ".join("'" + w.replace("'", "''") + "'" for w in words) + ":*"
        parts.append(func.to_tsquery(literal_column("'simple'"), lexemes))
    q = parts[0]
    for part in parts[1:]:
        q = q.op("&&")(part)
    return q


def _filter_clause(flt: SearchFilters) -> ColumnElement[bool]:
    parts: list[ColumnElement[bool]] = []
    if flt.kinds:
        parts.append(SearchDocRow.kind.in_([k.value for k in flt.kinds]))
    if flt.min_score is not None:
        parts.append(TaskRow.latest_score >= flt.min_score)
    if flt.max_score is not None:
        parts.append(TaskRow.latest_score <= flt.max_score)
    if flt.category:
        parts.append(TaskRow.latest_category == flt.category)
    if flt.outcome:
        none = flt.outcome == "none"
        parts.append(
            TaskRow.validation_outcome.is_(None) if none else TaskRow.validation_outcome == flt.outcome
        )
    if flt.status:
        parts.append(TaskRow.status == flt.status)
    if flt.batch_id:
        parts.append(TaskRow.batch_id == flt.batch_id)
    if flt.reviewer:
        decided = exists().where(FeedbackRow.task_id == TaskRow.id, FeedbackRow.reviewer == flt.reviewer)
        holding = exists().where(ClaimRow.task_id == TaskRow.id, ClaimRow.reviewer == flt.reviewer)
        parts.append(or_(decided, holding))
    if flt.since is not None:
        parts.append(SearchDocRow.created_at >= flt.since)
    if flt.until is not None:
        parts.append(SearchDocRow.created_at < flt.until)
    return and_(true(), *parts)


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

    def __init__(self, store: StoreBase) -> None:
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
        ranked = query.after.ranked if query.after is not None else await self._few_matches(query.text)
        if self.store.is_sqlite:
            rows = await self._sqlite_hits(query, ranked)
        else:
            rows = await self._pg_hits(query, ranked)
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

    async def _few_matches(self, text: str) -> bool:
        """At most ``RANK_LIMIT`` passages match: cheap to rank them all (counts up to the limit only)."""
        if self.store.is_sqlite:
            capped: Any = (
                select(literal_column("rowid"))
                .select_from(sql_text("search_fts"))
                .where(sql_text("search_fts MATCH :few_match").bindparams(few_match=fts5_query(text)))
                .limit(RANK_LIMIT + 1)
                .subquery()
            )
        else:
            tsv: ColumnElement[Any] = literal_column("search_docs.tsv")
            capped = (
                select(SearchDocRow.id)
                .where(tsv.op("@@")(_pg_tsquery(text)))
                .limit(RANK_LIMIT + 1)
                .subquery()
            )
        async with self.store.read_session() as s:
            n = (await s.execute(select(func.count()).select_from(capped))).scalar()
        return int(n or 0) <= RANK_LIMIT

    def _page_query(self, matched: Any, query: SearchQuery, ranked: bool) -> Any:
        q = (
            select(
                SearchDocRow.id,
                SearchDocRow.task_id,
                SearchDocRow.attempt_index,
                SearchDocRow.kind,
                SearchDocRow.ref,
                SearchDocRow.seg,
                TaskRow.title,
                TaskRow.status,
                matched.c.rank,
            )
            .select_from(matched)
            .join(SearchDocRow, SearchDocRow.id == matched.c.id)
            .join(TaskRow, TaskRow.id == SearchDocRow.task_id)
            .where(_filter_clause(query.filters))
        )
        if not ranked:  # newest first: the index's own order, so only a page is read
            if query.after is not None:
                q = q.where(matched.c.id < query.after.doc_id)
            return q.order_by(matched.c.id.desc()).limit(query.limit + 1)
        if query.after is not None:
            r, i = query.after.rank, query.after.doc_id
            q = q.where(or_(matched.c.rank > r, and_(matched.c.rank == r, matched.c.id > i)))
        return q.order_by(matched.c.rank, matched.c.id).limit(query.limit + 1)

    async def _sqlite_hits(self, query: SearchQuery, ranked: bool) -> list[dict[str, Any]]:
        match = fts5_query(query.text)
        score = "bm25(search_fts)" if ranked else "-search_fts.rowid"
        matched = (
            select(
                literal_column("search_fts.rowid").label("id"),
                literal_column(score, Float).label("rank"),
            )
            .select_from(sql_text("search_fts"))
            .where(sql_text("search_fts MATCH :search_match").bindparams(search_match=match))
            .subquery("matched")
        )
        async with self.store.read_session() as s:
            page = self._page_query(matched, query, ranked)
            rows = [dict(m) for m in (await s.execute(page)).mappings().all()]
            if rows:
                ids = ",".join(str(int(r["id"])) for r in rows)
                snippets = await s.execute(
                    sql_text(
                        "SELECT rowid, snippet(search_fts, 0, :a, :b, '…', 24) FROM search_fts "
                        f"WHERE search_fts MATCH :m AND rowid IN ({ids})"
                    ),
                    {"a": MARK_START, "b": MARK_END, "m": match},
                )
                found: dict[int, str] = {int(i): str(p) for i, p in snippets.all()}
                for r in rows:
                    r["passage"] = found.get(r["id"], "")
        return rows

    async def _pg_hits(self, query: SearchQuery, ranked: bool) -> list[dict[str, Any]]:
        tsq = _pg_tsquery(query.text)
        tsv: ColumnElement[Any] = literal_column("search_docs.tsv")
        score = -func.ts_rank(tsv, tsq) if ranked else -SearchDocRow.id
        matched = (
            select(SearchDocRow.id.label("id"), score.cast(Float).label("rank"))
            .where(tsv.op("@@")(tsq))
            .subquery("matched")
        )
        page = self._page_query(matched, query, ranked).subquery("page")
        headline = func.ts_headline(
            literal_column("'simple'"), SearchDocRow.body, tsq, bindparam("hl_opts", _HEADLINE)
        )
        order = (page.c.rank, page.c.id) if ranked else (page.c.id.desc(),)
        q = (
            select(page, headline.label("passage"))
            .join(SearchDocRow, SearchDocRow.id == page.c.id)
            .order_by(*order)
        )
        async with self.store.read_session() as s:
            return [dict(m) for m in (await s.execute(q)).mappings().all()]


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
