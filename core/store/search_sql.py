"""The search index's reads: matching, ranking, filters, keyset pages, passages; saved views' rows.

``core.search`` owns the query language (``terms``) and the query and result models (``models``),
and its service asks these functions; only the store knows the tables (tests/core/test_store_boundary.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlalchemy import Float, and_, bindparam, delete, exists, func, literal_column, or_, select, true
from sqlalchemy import text as sql_text
from sqlalchemy.sql.elements import ColumnElement

from core.search.terms import MARK_END, MARK_START, RANK_LIMIT, fts5_query, parse_terms
from core.store.base import StoreBase
from core.store.models import ClaimRow, FeedbackRow, SavedViewRow, SearchDocRow, TaskRow, utcnow

if TYPE_CHECKING:
    from core.search.models import SearchFilters, SearchQuery

_WORD_SPLIT = re.compile(r"[^\W_]+")
_HEADLINE = f'StartSel="{MARK_START}", StopSel="{MARK_END}", MaxWords=30, MinWords=12, MaxFragments=1'


def _pg_tsquery(text: str) -> ColumnElement[Any]:
    phrases, prefixes = parse_terms(text)
    parts: list[ColumnElement[Any]] = [func.phraseto_tsquery(literal_column("'simple'"), p) for p in phrases]
    for p in prefixes:
        words = _WORD_SPLIT.findall(p.lower())
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


async def few_matches(store: StoreBase, text: str) -> bool:
    """At most ``RANK_LIMIT`` passages match: cheap to rank them all (counts up to the limit only)."""
    if store.is_sqlite:
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
            select(SearchDocRow.id).where(tsv.op("@@")(_pg_tsquery(text))).limit(RANK_LIMIT + 1).subquery()
        )
    async with store.read_session() as s:
        n = (await s.execute(select(func.count()).select_from(capped))).scalar()
    return int(n or 0) <= RANK_LIMIT


def _page_query(matched: Any, query: SearchQuery, ranked: bool) -> Any:
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


async def sqlite_hits(store: StoreBase, query: SearchQuery, ranked: bool) -> list[dict[str, Any]]:
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
    async with store.read_session() as s:
        page = _page_query(matched, query, ranked)
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


async def pg_hits(store: StoreBase, query: SearchQuery, ranked: bool) -> list[dict[str, Any]]:
    tsq = _pg_tsquery(query.text)
    tsv: ColumnElement[Any] = literal_column("search_docs.tsv")
    score = -func.ts_rank(tsv, tsq) if ranked else -SearchDocRow.id
    matched = (
        select(SearchDocRow.id.label("id"), score.cast(Float).label("rank"))
        .where(tsv.op("@@")(tsq))
        .subquery("matched")
    )
    page = _page_query(matched, query, ranked).subquery("page")
    headline = func.ts_headline(
        literal_column("'simple'"), SearchDocRow.body, tsq, bindparam("hl_opts", _HEADLINE)
    )
    order = (page.c.rank, page.c.id) if ranked else (page.c.id.desc(),)
    q = (
        select(page, headline.label("passage"))
        .join(SearchDocRow, SearchDocRow.id == page.c.id)
        .order_by(*order)
    )
    async with store.read_session() as s:
        return [dict(m) for m in (await s.execute(q)).mappings().all()]


async def save_view_row(store: StoreBase, name: str, spec: dict[str, Any], created_by: str) -> None:
    async with store._write() as s:
        row = await s.get(SavedViewRow, name)
        if row is None:
            s.add(SavedViewRow(name=name, spec=spec, created_by=created_by, updated_at=utcnow()))
        else:
            row.spec = spec
            row.updated_at = utcnow()


async def view_rows(store: StoreBase, name: str | None = None) -> list[tuple[str, dict[str, Any], str]]:
    """(name, spec, created by) of every saved view, by name, or of the one named."""
    q = select(SavedViewRow).order_by(SavedViewRow.name)
    if name is not None:
        q = q.where(SavedViewRow.name == name)
    async with store.read_session() as s:
        return [(r.name, dict(r.spec), r.created_by) for r in (await s.scalars(q)).all()]


async def delete_view_row(store: StoreBase, name: str) -> bool:
    async with store._write() as s:
        done = await s.execute(delete(SavedViewRow).where(SavedViewRow.name == name))
    return bool(getattr(done, "rowcount", 0))


__all__ = ["delete_view_row", "few_matches", "pg_hits", "save_view_row", "sqlite_hits", "view_rows"]
