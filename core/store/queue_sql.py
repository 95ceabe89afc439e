"""The queue's SQL: the one filter clause, the one order, keyset pages, counts, and row matches.

Everything that decides which tasks a filtered queue shows is built here, once, by
``filter_clause``; a page, a count and a single-row "does it still match?" all use it, so a
live-updated row can never appear where a reload would not show it. Order is the column, NULL
lowest, then id; text columns compare by code point (``COLLATE "C"`` on PostgreSQL, SQLite's
default BINARY), which is how ``core.domain.queue.sort_key`` compares them.

Text is matched from an index on both engines: SQLite's trigram FTS5 table (any substring of
three characters or more), PostgreSQL's ``tasks.search`` tsvector with GIN (every typed word
starts a word of the task, rechecked with ILIKE so the typed text appears as typed). Counts
without text come from ``task_counts``, which triggers keep; counts with text cost a query
over every match and are the caller's to run in the background.

How a text filter's first pages are found depends on how many tasks match, which one bounded
probe of the index tells (``_text_plan``): a few thousand matches are read from the index and
sorted; beyond that, each group is walked in the queue's order (its status/updated index) and
every row is checked until the page is full, so a common word costs a page's worth of rows
instead of a pass over every match. The check is the index's own rule: a substring, ASCII
case folded, for ASCII text (exactly what the trigram phrase matches), and the index itself for
a row or a needle that is not plain ASCII.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import Boolean, Row, and_, cast, func, literal, literal_column, or_, select, true, union_all
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import CompoundSelect, Select
from sqlalchemy.sql.elements import ColumnElement

from core.domain.queue import (
    PageCursor,
    QueueFilter,
    QueuePage,
    QueueSort,
    SortColumn,
    group_pages,
)
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.store.base import StoreBase
from core.store.interrupt import interruptible_read
from core.store.models import TaskCountRow, TaskRow

_TEXT_COLUMNS = frozenset(
    {SortColumn.TITLE, SortColumn.LATEST_CATEGORY, SortColumn.STATUS, SortColumn.VALIDATION_OUTCOME}
)
_NULLABLE = frozenset({SortColumn.LATEST_SCORE, SortColumn.LATEST_CATEGORY, SortColumn.VALIDATION_OUTCOME})
# The trigram index needs three characters to answer from the index; shorter needles use LIKE.
_TRIGRAM_MIN = 3
# What PostgreSQL's text-search parser treats as part of a word, near enough: the ILIKE recheck
# keeps any difference from admitting a task that does not contain the typed text.
_WORD = re.compile(r"[^\W_]+")
# Above this many index matches a first page is found by walking the queue's order; at or below
# it, by reading the matches (each a primary-key lookup) and sorting them.
WALK_ABOVE = 5_000
# A row whose title or text holds any character outside ASCII: there only the index decides.
_NOT_ASCII = "*[^\x01-\x7f]*"
TextPlan = Literal["plain", "matches", "walk"]


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def filter_clause(
    store: StoreBase, flt: QueueFilter, *, shared: bool = False, walk: bool = False
) -> ColumnElement[bool]:
    """The one rule that decides whether a task is in the filtered queue (its group aside).

    ``shared``: the clause is used by several parts of one statement (a UNION of first pages);
    the index is then asked once, in a materialized CTE, rather than once per part.
    ``walk``: the statement walks tasks in the queue's order and stops at a page (many matches,
    see ``_text_plan``); the text is then checked per row rather than by reading every match.
    """
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
        parts.append(_text_clause(store, flt.text, shared=shared, walk=walk))
    if flt.batch_id:
        parts.append(TaskRow.batch_id == flt.batch_id)
    if flt.task_ids is not None:
        parts.append(_among(store, flt.task_ids))
    return and_(true(), *parts)


def _among(store: StoreBase, task_ids: tuple[str, ...]) -> ColumnElement[bool]:
    """The task is one of ``task_ids`` (a calibration cell's cases, up to every decided task):
    one JSON array parameter, so no count of ids meets the databases' limit on parameters."""
    ids = json.dumps(list(task_ids))
    if store.is_sqlite:
        return TaskRow.id.in_(select(literal_column("value")).select_from(func.json_each(literal(ids))))
    return TaskRow.id.in_(select(func.jsonb_array_elements_text(cast(literal(ids), JSONB))))


def _phrase(needle: str) -> str:
    return '"' + needle.replace('"', '""') + '"'


def _fts_hits(needle: str) -> Select[tuple[Any]]:
    return (
        select(literal_column("task_id"))
        .select_from(sql_text("tasks_fts"))
        .where(sql_text("tasks_fts MATCH :task_search").bindparams(task_search=_phrase(needle)))
    )


def _text_clause(store: StoreBase, needle: str, *, shared: bool, walk: bool) -> ColumnElement[bool]:
    if store.is_sqlite and store.has_task_search and len(needle) >= _TRIGRAM_MIN:
        # The trigram index answers the substring question without scanning every task; a
        # phrase query matches the text exactly as typed.
        hits = _fts_hits(needle)
        if walk:
            # ``id || ''`` keeps SQLite from driving the statement from the matches (a key
            # lookup for each, then a sort): it walks the group's order and stops at the page.
            # The index's answer is only built if a row that misses is not plain ASCII.
            indexed = TaskRow.id.concat("").in_(hits)
            if not (needle.isascii() and needle.isprintable()):
                return indexed
            pattern = "%" + like_escape(needle) + "%"
            ascii_text = or_(
                TaskRow.title.like(pattern, escape="\\"), TaskRow.text.like(pattern, escape="\\")
            )
            not_ascii = or_(
                TaskRow.title.op("GLOB")(literal(_NOT_ASCII)), TaskRow.text.op("GLOB")(literal(_NOT_ASCII))
            )
            # An ASCII substring is a trigram match in any row; a row with other characters
            # that misses it may still match under Unicode case folding: the index decides.
            return or_(ascii_text, and_(not_ascii, indexed))
        if shared:
            found = hits.cte("task_hits").prefix_with("MATERIALIZED")
            return TaskRow.id.in_(select(found.c.task_id))
        return TaskRow.id.in_(hits)
    if store.is_sqlite:
        # SQLite's LIKE ignores ASCII case, as the trigram index does.
        pattern = "%" + like_escape(needle) + "%"
        return or_(TaskRow.title.like(pattern, escape="\\"), TaskRow.text.like(pattern, escape="\\"))
    substring = or_(
        TaskRow.title.icontains(needle, autoescape=True), TaskRow.text.icontains(needle, autoescape=True)
    )
    words = _WORD.findall(needle)
    if not words:
        return substring  # nothing a word index knows (punctuation only): scan
    # Each typed word as a word prefix, in order: the GIN index finds the candidates, the
    # recheck keeps only tasks where the text appears exactly as typed.
    query = " <-> ".join("'" + w.lower() + "':*" for w in words)
    search = literal_column("tasks.search").op("@@", return_type=Boolean)
    return and_(search(func.to_tsquery(literal_column("'simple'"), query)), substring)


def _sort_column(store: StoreBase, column: SortColumn) -> ColumnElement[Any]:
    col: ColumnElement[Any] = getattr(TaskRow, column.value)
    if column in _TEXT_COLUMNS and not store.is_sqlite:
        col = col.collate("C")  # code-point order, as Python compares strings
    return col


def order_by(store: StoreBase, sort: QueueSort) -> list[ColumnElement[Any]]:
    col = _sort_column(store, sort.column)
    first = col.desc().nulls_last() if sort.descending else col.asc().nulls_first()
    return [first, TaskRow.id.asc()]


def _order_on(columns: Any, store: StoreBase, sort: QueueSort) -> list[ColumnElement[Any]]:
    """``order_by`` over a set of task columns (the table's, or a CTE's copy of them)."""
    col: ColumnElement[Any] = columns[sort.column.value]
    if sort.column in _TEXT_COLUMNS and not store.is_sqlite:
        col = col.collate("C")
    first = col.desc().nulls_last() if sort.descending else col.asc().nulls_first()
    return [first, columns.id.asc()]


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

    async def read(s: AsyncSession) -> list[Row[Any]]:
        plan = await _text_plan(s, store, flt)
        # A few matches: ``status || ''`` leaves the planner only the key lookups of the matches
        # (it would walk the whole group looking for them); many: walk and check each row.
        status = TaskRow.status.concat("") if plan == "matches" else TaskRow.status
        q = select(TaskRow.__table__).where(
            status.in_([st.value for st in statuses]), filter_clause(store, flt, walk=plan == "walk")
        )
        if after is not None:
            q = q.where(after_clause(store, sort, after))
        q = q.order_by(*order_by(store, sort)).limit(limit + 1)
        return list((await s.execute(q)).all())

    found = await interruptible_read(store, read)
    # Validation runs in a worker: a page of records is milliseconds of pure Python the
    # loop (painting, keystrokes) need not wait for in one piece.
    return await asyncio.to_thread(_one_page, found, sort, limit)


def _one_page(found: list[Row[Any]], sort: QueueSort, limit: int) -> QueuePage:
    rows = [TaskRecord.model_validate(values._asdict()) for values in found[:limit]]
    more = len(found) > limit
    return QueuePage(rows=tuple(rows), next=PageCursor.after(rows[-1], sort) if more else None)


async def first_pages(
    store: StoreBase,
    groups: Sequence[tuple[str, Sequence[TaskStatus]]],
    *,
    flt: QueueFilter,
    sort: QueueSort,
    limit: int,
) -> dict[str, QueuePage]:
    """The first page of several groups in one statement (one UNION ALL, one round trip).

    A keystroke used to cost a count and a page query per group; this asks the index once.
    """
    wanted = [(key, statuses) for key, statuses in groups if statuses]
    pages = {key: QueuePage(rows=(), next=None) for key, _ in groups}
    if not wanted:
        return pages

    async def read(s: AsyncSession) -> list[Row[Any]]:
        plan = await _text_plan(s, store, flt)
        q = _first_pages_query(store, wanted, flt=flt, sort=sort, limit=limit, plan=plan)
        # Rows as fetched: making them dicts is the worker's (about 2 ms a keystroke off the loop).
        return list((await s.execute(q)).all())

    found = await interruptible_read(store, read)
    # Validating and sorting a few hundred rows is the keystroke's biggest piece of pure Python:
    # it runs in a worker, so the loop keeps painting between the interpreter's switches.
    pages.update(await asyncio.to_thread(_group_pages, found, wanted, sort, limit))
    return pages


def _group_pages(
    found: list[Row[Any]],
    wanted: Sequence[tuple[str, Sequence[TaskStatus]]],
    sort: QueueSort,
    limit: int,
) -> dict[str, QueuePage]:
    grouped: list[list[TaskRecord]] = [[] for _ in wanted]
    for row in found:
        values = row._asdict()
        grouped[int(values.pop("queue_group"))].append(TaskRecord.model_validate(values))
    return group_pages(grouped, [name for name, _ in wanted], sort, limit)


async def _text_plan(session: AsyncSession, store: StoreBase, flt: QueueFilter) -> TextPlan:
    """How pages find a text filter's tasks: by the index's matches, by walking the order, or as any filter.

    One bounded probe: the index is asked for at most ``WALK_ABOVE + 1`` matches, so a rare word
    costs its few matches and a common one a fixed few milliseconds. Only SQLite's trigram index
    is probed; PostgreSQL's planner has the statistics to choose for itself.
    """
    needle = flt.text
    if not (needle and store.is_sqlite and store.has_task_search and len(needle) >= _TRIGRAM_MIN):
        return "plain"
    probe = select(func.count()).select_from(_fts_hits(needle).limit(WALK_ABOVE + 1).subquery())
    return "walk" if int((await session.execute(probe)).scalar_one()) > WALK_ABOVE else "matches"


def _first_pages_query(
    store: StoreBase,
    wanted: Sequence[tuple[str, Sequence[TaskStatus]]],
    *,
    flt: QueueFilter,
    sort: QueueSort,
    limit: int,
    plan: TextPlan,
) -> Select[Any] | CompoundSelect[Any]:
    """One arm per status (each then follows its status/updated index), labelled with its group.

    ``matches``: the few matching tasks are read once by key into a materialized CTE and each
    arm sorts its share; the planner cannot know the match set is small and would otherwise
    walk whole groups looking for members.
    """
    columns: Any
    clause: ColumnElement[bool]
    if plan == "matches":
        found = (
            select(TaskRow).where(filter_clause(store, flt)).cte("task_matches").prefix_with("MATERIALIZED")
        )
        columns, clause = found.c, true()
    else:
        columns, clause = TaskRow.__table__.c, filter_clause(store, flt, shared=True, walk=plan == "walk")
    arms = []
    for i, (_key, statuses) in enumerate(wanted):
        for status in statuses:
            arm = (
                select(*columns, literal_column(str(i)).label("queue_group"))
                .where(columns.status == status.value, clause)
                .order_by(*_order_on(columns, store, sort))
                .limit(limit + 1)
                .subquery()
            )
            arms.append(select(arm))
    return arms[0] if len(arms) == 1 else union_all(*arms)


async def stored_counts(store: StoreBase, flt: QueueFilter) -> dict[TaskStatus, int]:
    """Counts per status from ``task_counts``: a few rows, whatever the number of tasks.

    Exact for any filter without text (status and outcome are the table's key).
    """
    q = select(TaskCountRow.status, func.sum(TaskCountRow.n)).group_by(TaskCountRow.status)
    if flt.status is not None:
        q = q.where(TaskCountRow.status == flt.status.value)
    wanted = flt.outcome.outcomes()
    if wanted is not None:
        q = q.where(TaskCountRow.outcome.in_([o.value if o is not None else "" for o in wanted]))
    async with store.read_session() as s:
        found = (await s.execute(q)).all()
    counts = dict.fromkeys(TaskStatus, 0)
    for status, n in found:
        counts[TaskStatus(status)] = int(n or 0)
    return counts


def counts_are_cheap(flt: QueueFilter) -> bool:
    """Counting this filter costs a few rows of ``task_counts``, not a pass over the matches.

    The table counts by status and outcome only: a text or batch filter needs the tasks themselves.
    """
    return not flt.text and not flt.batch_id and flt.task_ids is None


async def count_by_status(store: StoreBase, flt: QueueFilter) -> dict[TaskStatus, int]:
    """Exact counts per status: from ``task_counts`` without text, else over every match."""
    if counts_are_cheap(flt):
        return await stored_counts(store, flt)
    return await recount_by_status(store, flt)


async def recount_by_status(store: StoreBase, flt: QueueFilter) -> dict[TaskStatus, int]:
    """A fresh COUNT over the tasks table (the check ``task_counts`` is tested against)."""
    q = select(TaskRow.status, func.count()).where(filter_clause(store, flt)).group_by(TaskRow.status)

    async def read(s: AsyncSession) -> list[Any]:
        return list((await s.execute(q)).all())

    found = await interruptible_read(store, read)  # a superseded count stops in the database
    counts = dict.fromkeys(TaskStatus, 0)
    for status, n in found:
        counts[TaskStatus(status)] = int(n)
    return counts


async def match_row(store: StoreBase, task_id: str, flt: QueueFilter) -> tuple[TaskRecord, bool] | None:
    """A task and whether the filter admits it, in one read: the live-update half of the rule.

    On SQLite the trigram index can only be asked for every match, not about one row (its
    ``task_id`` is unindexed), so a live update under a text filter used to cost the whole
    match set. The row is read with the rest of the filter instead, and its text is compared
    here with the index's semantics where they are known exactly (ASCII: substring, ASCII case
    folded); other text asks the index as before, so the rule stays the one ``filter_clause``.
    """
    local_text = _matches_locally(store, flt.text)
    asked = flt.model_copy(update={"text": ""}) if local_text else flt
    matches = filter_clause(store, asked).label("matches")
    q = select(TaskRow, matches).where(TaskRow.id == task_id)
    async with store.read_session() as s:
        found = (await s.execute(q)).first()
        if found is None:
            return None
        row, admitted = found
        task = TaskRecord.model_validate(row)
        if admitted and local_text:
            text_match = _ascii_contains(flt.text, task.title, task.text)
            if text_match is None:  # non-ASCII row text: the index decides
                again = select(filter_clause(store, flt)).select_from(TaskRow).where(TaskRow.id == task_id)
                text_match = bool((await s.execute(again)).scalar())
            admitted = text_match
    return task, bool(admitted)


def _matches_locally(store: StoreBase, needle: str) -> bool:
    """The needle goes to the trigram index, and Python can mirror it (printable ASCII)."""
    return (
        bool(needle)
        and store.is_sqlite
        and store.has_task_search
        and len(needle) >= _TRIGRAM_MIN
        and needle.isascii()
        and needle.isprintable()
    )


def _ascii_contains(needle: str, *fields: str) -> bool | None:
    """The trigram phrase rule for ASCII text: a substring of one field, ASCII case folded.

    None when a field is not plain ASCII: Unicode case folding is the index's, not Python's.
    """
    if not all(f.isascii() and "\x00" not in f for f in fields):
        return None
    wanted = needle.lower()
    return any(wanted in f.lower() for f in fields)


__all__ = [
    "after_clause",
    "count_by_status",
    "counts_are_cheap",
    "filter_clause",
    "first_pages",
    "like_escape",
    "match_row",
    "order_by",
    "page",
    "recount_by_status",
    "stored_counts",
]
