"""The review queue's vocabulary: groups, filters, sort orders and page cursors. Pure data.

The queue is read in two ways that must never disagree: pages come from SQL, and live updates
move single rows that a core notice says have changed. The *match* rule (does this task belong
in the filtered view?) is answered by the same SQL clause in both cases (see
``core.store.queue_sql``). The *order* rule is stated twice by necessity, once as SQL ``ORDER
BY`` and once as ``sort_key`` below for placing a live-updated row among the rows already
loaded; both put NULL lowest and break ties by id, text compares by code point on every engine,
and a hypothesis test pins the two together on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import cmp_to_key
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.domain.records import TaskRecord
from core.domain.status import TaskStatus, ValidationOutcome

S = TaskStatus


@dataclass(frozen=True)
class QueueGroup:
    """A band of the queue: the statuses an analyst works through together, in reading order."""

    key: str
    statuses: tuple[TaskStatus, ...]


# Needs review comes first and apart from work in flight: it is what the analyst is there for.
QUEUE_GROUPS: tuple[QueueGroup, ...] = (
    QueueGroup("needs_review", (S.NEEDS_REVIEW,)),
    QueueGroup("awaiting_feedback", (S.AWAITING_FEEDBACK,)),
    QueueGroup("needs_revision", (S.NEEDS_REVISION,)),
    QueueGroup("active", (S.RUNNING, S.VALIDATING)),
    QueueGroup("open", (S.OPEN,)),
    QueueGroup("failed", (S.FAILED,)),
    QueueGroup("closed", (S.CLOSED,)),
    QueueGroup("abandoned", (S.ABANDONED,)),
)
GROUP_OF_STATUS: dict[TaskStatus, str] = {s: g.key for g in QUEUE_GROUPS for s in g.statuses}
# Blind review: "needs review" (the validator did not endorse it) and "awaiting feedback" (it
# accepted) would tell the verdict by where a task sits, so both wait in one group, in one order.
BLIND_QUEUE_GROUPS: tuple[QueueGroup, ...] = (
    QueueGroup("to_judge", (S.NEEDS_REVIEW, S.AWAITING_FEEDBACK)),
    *QUEUE_GROUPS[2:],
)


# A second reviewer's list: one band whatever the status, which would tell the first decision
# (closed: satisfied, abandoned: abandon).
SECOND_REVIEW_QUEUE_GROUPS: tuple[QueueGroup, ...] = (QueueGroup("second_review", tuple(TaskStatus)),)


def group_of_status(groups: Sequence[QueueGroup]) -> dict[TaskStatus, str]:
    """Each status's group key among ``groups``."""
    return {s: g.key for g in groups for s in g.statuses}


class OutcomeFilter(StrEnum):
    ANY = "any"
    ACCEPTED = "accepted"
    FORCE_ACCEPTED = "force_accepted"
    UNVALIDATED = "unvalidated"
    NONE = "none"  # no answer reached validation

    def outcomes(self) -> tuple[ValidationOutcome | None, ...] | None:
        """The stored outcomes this choice admits; None admits every task."""
        return {
            OutcomeFilter.ANY: None,
            OutcomeFilter.ACCEPTED: (ValidationOutcome.ACCEPTED,),
            OutcomeFilter.FORCE_ACCEPTED: (ValidationOutcome.FORCE_ACCEPTED,),
            OutcomeFilter.UNVALIDATED: (ValidationOutcome.UNVALIDATED,),
            OutcomeFilter.NONE: (None,),
        }[self]


class QueueFilter(BaseModel):
    """What the analyst typed and picked in the filter bar."""

    model_config = ConfigDict(frozen=True)

    text: str = ""
    status: TaskStatus | None = None
    outcome: OutcomeFilter = OutcomeFilter.ANY
    batch_id: str | None = None  # the tasks of one batch (``evidence-desk batch``)
    task_ids: tuple[str, ...] | None = None  # exactly these tasks (a calibration cell's cases)
    cases_label: str = ""  # what ``task_ids`` are, in words ("validator accepted ∧ analyst abandoned")

    def statuses_in(self, group: QueueGroup) -> tuple[TaskStatus, ...]:
        """The group's statuses this filter lets through (none when the status picker excludes it)."""
        if self.status is None:
            return group.statuses
        return tuple(s for s in group.statuses if s is self.status)

    @property
    def is_empty(self) -> bool:
        return (
            not self.text
            and self.status is None
            and self.outcome is OutcomeFilter.ANY
            and not self.batch_id
            and self.task_ids is None
        )


class SortColumn(StrEnum):
    """The task fields the queue can sort by; each is a column the store can order on."""

    UPDATED_AT = "updated_at"
    CREATED_AT = "created_at"
    TITLE = "title"
    LATEST_SCORE = "latest_score"
    LATEST_CATEGORY = "latest_category"
    ATTEMPT_COUNT = "attempt_count"
    STATUS = "status"
    VALIDATION_OUTCOME = "validation_outcome"


class QueueSort(BaseModel):
    model_config = ConfigDict(frozen=True)

    column: SortColumn = SortColumn.UPDATED_AT
    descending: bool = True


SortValue = str | float | int | datetime | None


def sort_value(task: TaskRecord, column: SortColumn) -> SortValue:
    value: Any = getattr(task, column.value)
    return value.value if isinstance(value, StrEnum) else value


def sort_key(task: TaskRecord, sort: QueueSort) -> tuple[Any, ...]:
    """The queue's order as a Python key, equal to the store's ``ORDER BY``.

    NULL is the lowest value (first ascending, last descending), ties go by id ascending in both
    directions. Used with ``precedes``, never with ``sorted(reverse=True)``, because the id
    tie-break does not reverse.
    """
    value = sort_value(task, sort.column)
    return (value is not None, value if value is not None else 0)


def precedes(a: TaskRecord, b: TaskRecord, sort: QueueSort) -> bool:
    """True when ``a`` comes before ``b`` in the queue's order."""
    ka, kb = sort_key(a, sort), sort_key(b, sort)
    if ka == kb:
        return a.id < b.id
    return ka > kb if sort.descending else ka < kb


class PageCursor(BaseModel):
    """Where the next page starts: the last row's sort value and id (keyset, never OFFSET)."""

    model_config = ConfigDict(frozen=True)

    value: SortValue
    task_id: str

    @classmethod
    def after(cls, task: TaskRecord, sort: QueueSort) -> PageCursor:
        return cls(value=sort_value(task, sort.column), task_id=task.id)


class QueuePage(BaseModel):
    model_config = ConfigDict(frozen=True)

    rows: tuple[TaskRecord, ...]
    next: PageCursor | None  # None: this group has no more rows

    @property
    def complete(self) -> bool:
        return self.next is None


def group_pages(
    grouped: Sequence[list[TaskRecord]], keys: Sequence[str], sort: QueueSort, limit: int
) -> dict[str, QueuePage]:
    """Each group's first page from the rows its statuses' arms brought (each arm at most
    ``limit + 1`` rows in the queue's order, so the page and whether more follow are known).

    The store's one-statement reload and the desk's stdlib first read (``core.queue_peek``)
    both end here, so the rows the desk paints before the store opens are the rows the store's
    reload puts in the same places.
    """

    def compare(a: TaskRecord, b: TaskRecord) -> int:
        return -1 if precedes(a, b, sort) else 1

    key = cmp_to_key(compare)
    pages: dict[str, QueuePage] = {}
    for name, rows in zip(keys, grouped, strict=True):
        rows.sort(key=key)  # a union promises no order; each status's arm brings a page at most
        more = len(rows) > limit
        rows = rows[:limit]
        pages[name] = QueuePage(rows=tuple(rows), next=PageCursor.after(rows[-1], sort) if more else None)
    return pages


__all__ = [
    "BLIND_QUEUE_GROUPS",
    "GROUP_OF_STATUS",
    "QUEUE_GROUPS",
    "SECOND_REVIEW_QUEUE_GROUPS",
    "OutcomeFilter",
    "PageCursor",
    "QueueFilter",
    "QueueGroup",
    "QueuePage",
    "QueueSort",
    "SortColumn",
    "group_of_status",
    "group_pages",
    "precedes",
    "sort_key",
    "sort_value",
]
