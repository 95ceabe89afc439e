"""The read side the desk asks: queue pages, group counts, live row matches and task dossiers.

The desk holds no database object and composes no query (Anki's browser table asks the
collection for rows the same way). It keeps a row cache per group and asks this service three
questions: the first page of every group with the counts (a reload), the page after a cursor
(scrolling), and, when a core notice says one task changed, that task with whether the current
filter still admits it. Where a changed row goes among the rows already loaded is ``place``,
which uses the same order the store pages in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from core.domain.claims import ClaimRecord
from core.domain.queue import (
    QUEUE_GROUPS,
    PageCursor,
    QueueFilter,
    QueueGroup,
    QueuePage,
    QueueSort,
    group_pages,
    precedes,
)
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus

if TYPE_CHECKING:  # the dossier loads evidence rendering: imported when a task is first opened
    from core.queue_peek import Peek
    from core.store import Store
    from core.tasks.dossier import TaskDossier


class QueueSnapshot(BaseModel):
    """Counts per status and the first page of every group, read for one filter and order."""

    model_config = ConfigDict(frozen=True)

    # None when counting would cost more than the pages (a text filter): ask ``counts`` in the
    # background and show what the pages prove ("≥ N") meanwhile.
    counts: dict[TaskStatus, int] | None
    pages: dict[str, QueuePage]
    claims: dict[str, ClaimRecord] = {}  # reviewers' claims in force on the listed tasks


class RowUpdate(BaseModel):
    """One changed task as the queue must now show it, with the counts it changed."""

    model_config = ConfigDict(frozen=True)

    task: TaskRecord
    admitted: bool  # the current filter admits it (its group is its status's)
    # Exact counts when they cost a few rows of ``task_counts``; None under a text filter, where
    # the reader adjusts its own counts by the move this update describes.
    counts: dict[TaskStatus, int] | None
    claim: ClaimRecord | None = None  # who is reviewing it, if anyone


def group_count(group: QueueGroup, flt: QueueFilter, counts: Mapping[TaskStatus, int]) -> int:
    return sum(counts.get(s, 0) for s in flt.statuses_in(group))


def place(rows: Sequence[TaskRecord], task: TaskRecord, sort: QueueSort, *, complete: bool) -> int | None:
    """Where ``task`` goes among a group's loaded ``rows`` (which must not contain it).

    ``None`` when it sorts after every loaded row of a group that has more rows in the store:
    it belongs to a page not loaded yet, and showing it at the end would put it out of order.
    """
    for i, other in enumerate(rows):
        if precedes(task, other, sort):
            return i
    return len(rows) if complete else None


def snapshot_from_peek(peek: Peek, sort: QueueSort) -> QueueSnapshot:
    """The reload ``TaskQueue.snapshot`` would give for no filter, from the stdlib's first read.

    The desk paints this before the store is open; claims are not read there (a team's marks
    arrive with the store's first reload, a moment later).
    """
    counts = {status: peek.counts.get(status.value, 0) for status in TaskStatus}
    grouped = [[TaskRecord.model_validate(values) for values in rows] for rows in peek.groups]
    pages = group_pages(grouped, [g.key for g in QUEUE_GROUPS], sort, peek.limit)
    return QueueSnapshot(counts=counts, pages=pages)


class TaskQueue:
    """The queue's read model over one workspace's store."""

    def __init__(self, store: Store) -> None:
        # The store's SQL (SQLAlchemy, a few hundred ms of imports) is imported with the first
        # store this queue is given, not with this module: the desk lists its first page from the
        # standard library's sqlite3 before anything has opened the store (``core.queue_peek``).
        from core.store import queue_sql

        self._store = store
        self._sql = queue_sql

    async def snapshot(
        self,
        flt: QueueFilter,
        sort: QueueSort,
        *,
        page_size: int,
        groups: Sequence[QueueGroup] = QUEUE_GROUPS,
    ) -> QueueSnapshot:
        """A reload in at most two statements: stored counts (when cheap), then one page query.

        ``groups``: the bands to page (blind review pages ``BLIND_QUEUE_GROUPS``, where tasks
        awaiting a decision share one band whatever the verdict).

        With stored counts, groups with no task cost nothing; under a text filter the index is
        asked once, for the first page of every group, and the counts are left to ``counts``.
        """
        counts = await self._sql.stored_counts(self._store, flt) if self._sql.counts_are_cheap(flt) else None
        arms = [(g.key, [s for s in flt.statuses_in(g) if counts is None or counts[s]]) for g in groups]
        pages = await self._sql.first_pages(self._store, arms, flt=flt, sort=sort, limit=page_size)
        claims = await self.claims([t.id for p in pages.values() for t in p.rows])
        return QueueSnapshot(counts=counts, pages=pages, claims=claims)

    async def claims(self, task_ids: Sequence[str]) -> dict[str, ClaimRecord]:
        """Claims in force on these tasks, for the queue's "claimed by" marks."""
        return await self._store.claims_for(task_ids, datetime.now(UTC))

    async def page(
        self, group: QueueGroup, flt: QueueFilter, sort: QueueSort, *, after: PageCursor | None, limit: int
    ) -> QueuePage:
        return await self._sql.page(
            self._store, statuses=flt.statuses_in(group), flt=flt, sort=sort, after=after, limit=limit
        )

    async def counts(self, flt: QueueFilter) -> dict[TaskStatus, int]:
        return await self._sql.count_by_status(self._store, flt)

    async def row(self, task_id: str, flt: QueueFilter) -> RowUpdate | None:
        """A changed task and whether the filter admits it; None when it no longer exists."""
        found = await self._sql.match_row(self._store, task_id, flt)
        if found is None:
            return None
        task, admitted = found
        counts = await self._sql.stored_counts(self._store, flt) if self._sql.counts_are_cheap(flt) else None
        claim = await self._store.get_claim(task.id, datetime.now(UTC))
        return RowUpdate(task=task, admitted=admitted, counts=counts, claim=claim)

    async def dossier(self, task_id: str) -> TaskDossier:
        # A running attempt's events are written behind its loop; wait for them so a view that
        # reloads on an "evidence recorded" notice sees what the notice announced.
        from core.tasks.dossier import load_dossier

        await self._store.flush()
        return await load_dossier(self._store, task_id, resolve=False)  # big texts paged by the desk


__all__ = ["QueueSnapshot", "RowUpdate", "TaskQueue", "group_count", "place", "snapshot_from_peek"]
