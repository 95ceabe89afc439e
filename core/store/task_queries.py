"""Task lists for the command line, crash recovery and tests, on the queue's one filter and order.

These are conveniences over ``core.store.queue_sql``: whatever list a caller asks for, a task is
in it by the same clause and in the same order as in the desk's queue.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import false, or_, select

from core.domain.queue import QueueFilter, QueueSort, SortColumn
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.store import queue_sql
from core.store.base import StoreBase
from core.store.models import TaskRow


class TaskQueries(StoreBase):
    """Whole task lists and counts per status; a mixin of ``Store``."""

    async def list_tasks(
        self,
        *,
        statuses: Sequence[TaskStatus] | None = None,
        text: str | None = None,
        limit: int | None = None,
        order_by: SortColumn | str = SortColumn.UPDATED_AT,
        descending: bool = True,
        runners: Sequence[str | None] | None = None,
    ) -> list[TaskRecord]:
        """``runners``: only tasks run by these (None: tasks no process claims)."""
        sort = QueueSort(column=SortColumn(order_by), descending=descending)
        q = select(TaskRow).where(queue_sql.filter_clause(self, QueueFilter(text=text or "")))
        if statuses:
            q = q.where(TaskRow.status.in_([s.value for s in statuses]))
        if runners is not None:
            named = [r for r in runners if r is not None]
            q = q.where(
                or_(TaskRow.runner.in_(named), TaskRow.runner.is_(None) if None in runners else false())
            )
        q = q.order_by(*queue_sql.order_by(self, sort))
        if limit is not None:
            q = q.limit(limit)
        return await self._select(TaskRecord, q)

    async def runners_of(self, statuses: Sequence[TaskStatus]) -> list[str | None]:
        """Who runs the tasks in ``statuses`` (None for unclaimed ones), each named once.

        Start-up recovery asks this first: a million-task workspace has thousands of running
        tasks, nearly all of them run by live processes, and reading every one of them to learn
        that cost the desk's start ~170 ms of CPU at 1M tasks.
        """
        q = select(TaskRow.runner).where(TaskRow.status.in_([s.value for s in statuses])).distinct()
        async with self._read() as s:
            return list((await s.scalars(q)).all())

    async def count_tasks_by_status(self, *, text: str | None = None) -> dict[TaskStatus, int]:
        return await queue_sql.count_by_status(self, QueueFilter(text=text or ""))
