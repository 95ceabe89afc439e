"""The queue's SQL: the one filter clause, the one order, keyset pages, counts, and row matches.

Everything that decides which tasks a filtered queue shows is built here, once, by
``filter_clause``; a page, a count and a single-row "does it still match?" all use it, so a
live-updated row can never appear where a reload would not show it. Order is the column, NULL
lowest, then id; text columns compare by code point (``COLLATE "C"`` on PostgreSQL, SQLite's
default BINARY), which is how ``core.domain.queue.sort_key`` compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, func, literal, or_, select, true
from sqlalchemy import text as sql_text
from sqlalchemy.sql.elements import ColumnElement

from core.domain.queue import PageCursor, QueueFilter, QueuePage, QueueSort, SortColumn
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.store.base import StoreBase
from core.store.models import TaskRow

_TEXT_COLUMNS = frozenset(
    {SortColumn.TITLE, SortColumn.LATEST_CATEGORY, SortColumn.STATUS, SortColumn.VALIDATION_OUTCOME}
)
_NULLABLE = frozenset({SortColumn.LATEST_SCORE, SortColumn.LATEST_CATEGORY, SortColumn.VALIDATION_OUTCOME})
# The trigram index needs three characters to answer from the index; shorter needles use LIKE.
_TRIGRAM_MIN = 3


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def filter_clause(store: StoreBase, flt: QueueFilter) -> ColumnElement[bool]:
    """The one rule that decides whether a task is in the filtered queue (its group aside)."""
    parts: list[ColumnElement[bool]] = []
    if flt.status is not None:
        parts.append(TaskRow.status == flt.status.value)
    wanted = flt.outcome.outcomes()
    if wanted is not None:
        named = [o.value for o in wanted if o is not None]
        cond: ColumnElement[bool] = TaskRow.validation_outcome.in_(named)
        if None in wanted:
            cond = or_(cond, TaskRow.validation_outcome.is_(None))
        parts.append(cond)
    if flt.text:
        parts.append(_text_clause(store, flt.text))
    if flt.batch_id:
        parts.append(TaskRow.batch_id == flt.batch_id)
    return and_(true(), *parts)


def _text_clause(store: StoreBase, needle: str) -> ColumnElement[bool]:
    if store.is_sqlite and store.has_task_search and len(needle) >= _TRIGRAM_MIN:
        # The trigram index answers the substring question without scanning every task; a
        # phrase query matches the text exactly as typed.
        phrase = '"' + needle.replace('"', '""') + '"'
        return and_(
            true(),
            sql_text(
                "tasks.id IN (SELECT task_id FROM tasks_fts WHERE tasks_fts MATCH :task_search)"
            ).bindparams(task_search=phrase),
        )
    if store.is_sqlite:
        # SQLite's LIKE ignores ASCII case, as the trigram index does.
        pattern = "%" + like_escape(needle) + "%"
        return or_(TaskRow.title.like(pattern, escape="\\"), TaskRow.text.like(pattern, escape="\\"))
    return or_(
        TaskRow.title.icontains(needle, autoescape=True), TaskRow.text.icontains(needle, autoescape=True)
    )


def _sort_column(store: StoreBase, column: SortColumn) -> ColumnElement[Any]:
    col: ColumnElement[Any] = getattr(TaskRow, column.value)
    if column in _TEXT_COLUMNS and not store.is_sqlite:
        col = col.collate("C")  # code-point order, as Python compares strings
    return col


def order_by(store: StoreBase, sort: QueueSort) -> list[ColumnElement[Any]]:
    col = _sort_column(store, sort.column)
    first = col.desc().nulls_last() if sort.descending else col.asc().nulls_first()
    return [first, TaskRow.id.asc()]


def after_clause(store: StoreBase, sort: QueueSort, cursor: PageCursor) -> ColumnElement[bool]:
    """Rows strictly after the cursor in the queue's order (NULL lowest, id ascending on ties)."""
    col = _sort_column(store, sort.column)
    nullable = sort.column in _NULLABLE
    tie = TaskRow.id > cursor.task_id
    if cursor.value is None:
        if sort.descending:  # NULLs come last: only other NULLs with a larger id follow
            return and_(col.is_(None), tie)
        return or_(and_(col.is_(None), tie), col.is_not(None))
    value = literal(cursor.value, type_=getattr(TaskRow, sort.column.value).type)
    beyond = col < value if sort.descending else col > value
    clause = or_(beyond, and_(col == value, tie))
    if nullable and sort.descending:
        clause = or_(clause, col.is_(None))
    return clause


async def page(
    store: StoreBase,
    *,
    statuses: Sequence[TaskStatus],
    flt: QueueFilter,
    sort: QueueSort,
    after: PageCursor | None,
    limit: int,
) -> QueuePage:
    """One keyset page: the cost is the page, not how far down the group it is."""
    if not statuses:
        return QueuePage(rows=(), next=None)
    q = select(TaskRow).where(TaskRow.status.in_([s.value for s in statuses]), filter_clause(store, flt))
    if after is not None:
        q = q.where(after_clause(store, sort, after))
    q = q.order_by(*order_by(store, sort)).limit(limit + 1)
    async with store.read_session() as s:
        rows = [TaskRecord.model_validate(r) for r in (await s.scalars(q)).all()]
    more = len(rows) > limit
    rows = rows[:limit]
    return QueuePage(rows=tuple(rows), next=PageCursor.after(rows[-1], sort) if more else None)


async def count_by_status(store: StoreBase, flt: QueueFilter) -> dict[TaskStatus, int]:
    q = select(TaskRow.status, func.count()).where(filter_clause(store, flt)).group_by(TaskRow.status)
    async with store.read_session() as s:
        found = (await s.execute(q)).all()
    counts = dict.fromkeys(TaskStatus, 0)
    for status, n in found:
        counts[TaskStatus(status)] = int(n)
    return counts


async def match_row(store: StoreBase, task_id: str, flt: QueueFilter) -> tuple[TaskRecord, bool] | None:
    """A task and whether the filter admits it, in one read: the live-update half of the rule."""
    matches = filter_clause(store, flt).label("matches")
    q = select(TaskRow, matches).where(TaskRow.id == task_id)
    async with store.read_session() as s:
        found = (await s.execute(q)).first()
    if found is None:
        return None
    row, admitted = found
    return TaskRecord.model_validate(row), bool(admitted)


__all__ = ["after_clause", "count_by_status", "filter_clause", "like_escape", "match_row", "order_by", "page"]
