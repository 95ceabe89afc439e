"""The rows judge calibration reads: each decided attempt's analyst decision beside its verdict.

Three set-based queries, each one pass over its table: decisions (feedback rows joined to the
verdict of the attempt they decided), overrides (``analyst_verdict_recorded`` events) and the
verdicts of overridden attempts no feedback row named. The JSON facts (validator model, warning
codes) are extracted by the database (``JSON_EXTRACT`` on SQLite, ``->>`` on PostgreSQL) so no
debug blob crosses into Python. Folding rows into figures is ``core.calibration``'s job.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from core.domain.facts import EventKind
from core.domain.status import FeedbackAction
from core.store.base import StoreBase
from core.store.models import EventRow, FeedbackRow, ValidationRow

_CHUNK = 500


@dataclass(frozen=True, slots=True)
class Verdict:
    status: str
    category: str
    model: str | None
    warnings: str | None  # the warnings' JSON array as text, parsed only when not empty
    created_at: datetime


@dataclass(frozen=True, slots=True)
class DecisionRow:
    task_id: str
    attempt_id: str
    action: str  # satisfied | revise | abandon
    decided_at: datetime
    verdict: Verdict | None


@dataclass(frozen=True, slots=True)
class OverrideRow:
    task_id: str
    attempt_id: str
    decided_at: datetime


def _verdict_columns() -> tuple[Any, ...]:
    debug = ValidationRow.debug
    return (
        ValidationRow.status,
        ValidationRow.category,
        debug["validator_model"].as_string(),
        debug["warnings"].as_string(),
        ValidationRow.created_at,
    )


def _verdict(row: tuple[object, ...]) -> Verdict | None:
    status, category, model, warnings, created = row
    if status is None:
        return None
    assert isinstance(created, datetime)
    return Verdict(
        str(status),
        str(category),
        model if isinstance(model, str) else None,
        warnings if isinstance(warnings, str) and warnings else None,
        created,
    )


async def decision_rows(
    store: StoreBase, *, since: datetime | None = None, until: datetime | None = None
) -> list[DecisionRow]:
    """Every analyst decision on an attempt, with that attempt's verdict(s) (one row per verdict)."""
    q = (
        select(
            FeedbackRow.task_id,
            FeedbackRow.attempt_id,
            FeedbackRow.action,
            FeedbackRow.created_at,
            *_verdict_columns(),
        )
        .outerjoin(ValidationRow, ValidationRow.attempt_id == FeedbackRow.attempt_id)
        .where(FeedbackRow.action.in_([a.value for a in FeedbackAction]), FeedbackRow.attempt_id.is_not(None))
    )
    if since is not None:
        q = q.where(FeedbackRow.created_at >= since)
    if until is not None:
        q = q.where(FeedbackRow.created_at < until)
    async with store.read_session() as s:
        result = await s.execute(q)
        return [DecisionRow(r[0], str(r[1]), r[2], r[3], _verdict(tuple(r[4:]))) for r in result]


async def override_rows(
    store: StoreBase, *, since: datetime | None = None, until: datetime | None = None
) -> list[OverrideRow]:
    """Every recorded analyst verdict (override), oldest first."""
    attempt = EventRow.payload["attempt_id"].as_string()
    q = select(EventRow.task_id, attempt, EventRow.created_at).where(
        EventRow.kind == EventKind.ANALYST_VERDICT_RECORDED.value
    )
    if since is not None:
        q = q.where(EventRow.created_at >= since)
    if until is not None:
        q = q.where(EventRow.created_at < until)
    async with store.read_session() as s:
        result = await s.execute(q.order_by(EventRow.id))
        return [OverrideRow(str(r[0]), str(r[1]), r[2]) for r in result]


async def verdicts_for(store: StoreBase, attempt_ids: Iterable[str]) -> dict[str, Verdict]:
    """The latest verdict of each named attempt (those with none are left out)."""
    ids = list(attempt_ids)
    found: dict[str, Verdict] = {}
    async with store.read_session() as s:
        for start in range(0, len(ids), _CHUNK):
            q = select(ValidationRow.attempt_id, *_verdict_columns()).where(
                ValidationRow.attempt_id.in_(ids[start : start + _CHUNK])
            )
            for r in await s.execute(q):
                v = _verdict(tuple(r[1:]))
                prev = found.get(r[0])
                if v is not None and (prev is None or v.created_at >= prev.created_at):
                    found[r[0]] = v
    return found


__all__ = ["DecisionRow", "OverrideRow", "Verdict", "decision_rows", "override_rows", "verdicts_for"]
