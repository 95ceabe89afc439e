"""The standing citation marks, counted by the database for calibration's citation precision.

A ``citation_marked`` event marks one citation of one verdict right or wrong; the latest mark on a
citation stands (``core.tasks.citation_marks``). One statement numbers each citation's marks
newest first (a window over verdict and place: one pass over the marks), keeps the first and
counts per validator model, version, reviewer and mark, so no event crosses into Python. The
verdict is joined (for its category) only when a category is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from core.domain.event_codec import payload_key
from core.domain.event_payloads import CitationMark
from core.domain.facts import EventKind
from core.store.base import StoreBase
from core.store.models import EventRow, TaskRow, ValidationRow

_VALIDATION = payload_key(CitationMark, "validation_id")
_PLACE = payload_key(CitationMark, "citation")
_MARK = payload_key(CitationMark, "mark")
_REVIEWER = payload_key(CitationMark, "reviewer")
_MODEL = payload_key(CitationMark, "validator_model")
_VERSION = payload_key(CitationMark, "validator_version")


@dataclass(frozen=True, slots=True)
class MarkGroup:
    """Standing marks sharing a validator model, version, verdict category, marker and mark."""

    model: str | None
    version: str | None
    category: str | None
    reviewer: str
    mark: str
    n: int


async def mark_groups(
    store: StoreBase,
    since: datetime | None = None,
    until: datetime | None = None,
    batch_id: str | None = None,
    *,
    category: str | None = None,
) -> list[MarkGroup]:
    """Each citation's latest mark, counted per (model, version, reviewer, mark); with ``category``
    only marks on verdicts of that category (the groups then carry it).

    The period and the batch narrow the standing marks (a mark made before ``since`` and replaced
    after it counts as the replacement), never which mark stands.
    """
    p = EventRow.payload
    newest = func.row_number().over(
        partition_by=(p[_VALIDATION].as_string(), p[_PLACE].as_integer()), order_by=EventRow.id.desc()
    )
    marks = (
        select(
            p[_MODEL].as_string().label("model"),
            p[_VERSION].as_string().label("version"),
            p[_REVIEWER].as_string().label("reviewer"),
            p[_MARK].as_string().label("mark"),
            p[_VALIDATION].as_string().label("validation"),
            EventRow.created_at.label("at"),
            EventRow.task_id.label("task"),
            newest.label("newest"),
        )
        .where(EventRow.kind == EventKind.CITATION_MARKED.value)
        .subquery()
    )
    keys = (marks.c.model, marks.c.version, marks.c.reviewer, marks.c.mark)
    q = select(*keys, func.count()).where(marks.c.newest == 1).group_by(*keys)
    if category is not None:
        q = q.join(ValidationRow, ValidationRow.id == marks.c.validation).where(
            ValidationRow.category == category
        )
    if since is not None:
        q = q.where(marks.c.at >= since)
    if until is not None:
        q = q.where(marks.c.at < until)
    if batch_id is not None:
        q = q.where(marks.c.task.in_(select(TaskRow.id).where(TaskRow.batch_id == batch_id)))
    async with store.read_session() as s:
        rows = await s.execute(q)
        return [
            MarkGroup(r[0] or None, r[1] or None, category, str(r[2]), str(r[3]), int(r[4])) for r in rows
        ]


__all__ = ["MarkGroup", "mark_groups"]
