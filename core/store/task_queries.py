"""The queue's task queries: one filtered, sorted page, and counts per status.

Moved here unchanged from the old single-module store; the read model that replaces this query
path is being built elsewhere, so keep edits to what that work needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy import text as sql_text

from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.store.base import StoreBase
from core.store.models import TaskRow


class TaskQueries(StoreBase):
    """Queue pages and group counts; a mixin of ``Store``."""

    SORTABLE = (
        "updated_at",
        "created_at",
        "title",
        "latest_score",
        "latest_category",
        "attempt_count",
        "status",
        "validation_outcome",
    )

    def _task_filter(
        self,
        q: Any,
        statuses: Sequence[TaskStatus] | None,
        text: str | None,
        outcomes: Sequence[str | None] | None,
    ) -> Any:
        if statuses:
            q = q.where(TaskRow.status.in_([s.value for s in statuses]))
        if text:
            if self.is_sqlite and self._task_search and len(text) >= 3:
                # The trigram index (migration 0002) answers the same substring question without
                # scanning every task; a phrase query matches the text exactly as typed.
                phrase = '"' + text.replace('"', '""') + '"'
                q = q.where(
                    sql_text(
                        "tasks.id IN (SELECT task_id FROM tasks_fts WHERE tasks_fts MATCH :task_search)"
                    ).bindparams(task_search=phrase)
                )
            elif self.is_sqlite:
                # SQLite's LIKE already ignores ASCII case; icontains would wrap both columns in
                # lower() and cost the desk's filter ~40% more per keystroke on 100k tasks.
                pattern = "%" + _like_escape(text) + "%"
                q = q.where(
                    TaskRow.title.like(pattern, escape="\\") | TaskRow.text.like(pattern, escape="\\")
                )
            else:
                q = q.where(
                    TaskRow.title.icontains(text, autoescape=True)
                    | TaskRow.text.icontains(text, autoescape=True)
                )
        if outcomes:
            named = [o for o in outcomes if o is not None]
            cond: Any = TaskRow.validation_outcome.in_(named)
            if None in outcomes:
                cond = cond | TaskRow.validation_outcome.is_(None)
            q = q.where(cond)
        return q

    async def list_tasks(
        self,
        *,
        statuses: Sequence[TaskStatus] | None = None,
        text: str | None = None,
        outcomes: Sequence[str | None] | None = None,
        limit: int | None = None,
        offset: int = 0,
        order_by: str = "updated_at",
        descending: bool = True,
    ) -> list[TaskRecord]:
        """One page of tasks; the desk's queue pages through each status group with this."""
        if order_by not in self.SORTABLE:
            raise ValueError(f"cannot sort tasks by {order_by!r}")
        column = getattr(TaskRow, order_by)
        q = self._task_filter(select(TaskRow), statuses, text, outcomes)
        q = q.order_by(column.desc() if descending else column.asc(), TaskRow.id).offset(offset)
        if limit is not None:
            q = q.limit(limit)
        async with self._read() as s:
            return [TaskRecord.model_validate(r) for r in (await s.scalars(q)).all()]

    async def count_tasks_by_status(
        self, *, text: str | None = None, outcomes: Sequence[str | None] | None = None
    ) -> dict[TaskStatus, int]:
        q = self._task_filter(select(TaskRow.status, func.count()), None, text, outcomes).group_by(
            TaskRow.status
        )
        async with self._read() as s:
            rows = (await s.execute(q)).all()
        counts = dict.fromkeys(TaskStatus, 0)
        for status, n in rows:
            counts[TaskStatus(status)] = int(n)
        return counts


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
