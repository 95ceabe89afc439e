"""The standing citation marks, counted by the database for calibration's citation precision.

A ``citation_marked`` event marks one citation of one verdict right or wrong; the latest mark on a
citation stands (``core.tasks.citation_marks``). One statement picks each citation's latest mark
(the highest event id per verdict and place), joins its verdict for the category, and counts per
validator model, version, category, reviewer and mark, so no event crosses into Python.
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
) -> list[MarkGroup]:
    """Each citation's latest mark, counted per (model, version, category, reviewer, mark).

    The period and the batch narrow the standing marks (a mark made before ``since`` and replaced
    after it counts as the replacement), never which mark stands.
    """
    p = EventRow.payload
    latest = (
        select(func.max(EventRow.id))
        .where(EventRow.kind == EventKind.CITATION_MARKED.value)
        .group_by(p[_VALIDATION].as_string(), p[_PLACE].as_integer())
    )
    keys = (
        p[_MODEL].as_string(), p[_VERSION].as_string(), ValidationRow.category,
        p[_REVIEWER].as_string(), p[_MARK].as_string(),
    )  # fmt: skip
    q = (
        select(*keys, func.count())
        .select_from(EventRow)
        .outerjoin(ValidationRow, ValidationRow.id == p[_VALIDATION].as_string())
        .where(EventRow.id.in_(latest))
        .group_by(*keys)
    )
    if since is not None:
        q = q.where(EventRow.created_at >= since)
    if until is not None:
        q = q.where(EventRow.created_at < until)
    if batch_id is not None:
        q = q.where(EventRow.task_id.in_(select(TaskRow.id).where(TaskRow.batch_id == batch_id)))
    async with store.read_session() as s:
        rows = await s.execute(q)
        return [MarkGroup(r[0] or None, r[1] or None, r[2], str(r[3]), str(r[4]), int(r[5])) for r in rows]


__all__ = ["MarkGroup", "mark_groups"]
