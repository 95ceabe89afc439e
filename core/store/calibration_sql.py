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
from datetime import date, datetime
from typing import Any

from sqlalchemy import Date, and_, cast, func, select

from core.domain.event_codec import payload_key
from core.domain.event_payloads import AnalystVerdictRecord, ValidationDebug
from core.domain.facts import EventKind
from core.domain.status import FeedbackAction
from core.store.base import StoreBase
from core.store.models import BatchRow, EventRow, FeedbackRow, TaskRow, ValidationRow

# JSON keys read inside the database, named by the models that write them (a rename fails at import).
_VALIDATOR_MODEL = payload_key(ValidationDebug, "validator_model")
_WARNINGS = payload_key(ValidationDebug, "warnings")
_VALIDATOR_VERSION = payload_key(ValidationDebug, "validator_version")
_OVERRIDE_ATTEMPT = payload_key(AnalystVerdictRecord, "attempt_id")

_CHUNK = 500


@dataclass(frozen=True, slots=True)
class Verdict:
    status: str
    category: str
    model: str | None
    warnings: str | None  # the warnings' JSON array as text, parsed only when not empty
    created_at: datetime
    version: str | None = None  # the validator_version (None: a verdict from before versions)


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
        debug[_VALIDATOR_MODEL].as_string(),
        debug[_WARNINGS].as_string(),
        ValidationRow.created_at,
        debug[_VALIDATOR_VERSION].as_string(),
    )


def _verdict(row: tuple[object, ...]) -> Verdict | None:
    status, category, model, warnings, created, version = row
    if status is None:
        return None
    assert isinstance(created, datetime)
    return Verdict(
        str(status),
        str(category),
        model if isinstance(model, str) else None,
        warnings if isinstance(warnings, str) and warnings else None,
        created,
        version if isinstance(version, str) and version else None,
    )


@dataclass(frozen=True, slots=True)
class DecisionGroup:
    """How many decided attempts share one verdict status, decision, category, model, day and warnings."""

    status: str | None  # None: the attempt was never validated
    action: str  # satisfied | revise | abandon
    category: str | None
    model: str | None
    warnings: str | None
    day: date
    n: int
    version: str | None = None


def _override_attempts() -> Any:
    attempt = EventRow.payload[_OVERRIDE_ATTEMPT].as_string()
    # No NULL may reach ``NOT IN``: one would make it match nothing.
    return select(attempt).where(
        EventRow.kind == EventKind.ANALYST_VERDICT_RECORDED.value, attempt.is_not(None)
    )


def _decisions() -> Any:
    return and_(
        FeedbackRow.action.in_([a.value for a in FeedbackAction]), FeedbackRow.attempt_id.is_not(None)
    )


def _repeated() -> tuple[Any, Any]:
    """Attempts with more than one decision, and attempts with more than one verdict."""
    fb = select(FeedbackRow.attempt_id).where(_decisions()).group_by(FeedbackRow.attempt_id)
    v = select(ValidationRow.attempt_id).group_by(ValidationRow.attempt_id)
    return fb.having(func.count() > 1), v.having(func.count() > 1)


def _batch_tasks(batch_id: str) -> Any:
    return select(TaskRow.id).where(TaskRow.batch_id == batch_id)


def _in_range(q: Any, since: datetime | None, until: datetime | None, batch_id: str | None = None) -> Any:
    if since is not None:
        q = q.where(FeedbackRow.created_at >= since)
    if until is not None:
        q = q.where(FeedbackRow.created_at < until)
    if batch_id is not None:  # tasks.batch_id is indexed (uq_tasks_batch_key leads with it)
        q = q.where(FeedbackRow.task_id.in_(_batch_tasks(batch_id)))
    return q


async def decision_groups(
    store: StoreBase,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    batch_id: str | None = None,
) -> list[DecisionGroup]:
    """Attempts decided by feedback (not overridden), counted per verdict and decision.

    The common case (one decision, at most one verdict) is one ``GROUP BY`` over the join, so only
    a few hundred groups cross into Python for 100,000 decisions. Attempts decided more than once
    (reopened) or validated more than once are left out of it and folded row by row, each once:
    its last decision in range against its latest verdict.
    """
    status, category, model, warnings, _, version = _verdict_columns()
    many_fb, many_v = _repeated()
    async with store.read_session() as s:
        conn = await s.connection()
        day = (
            func.date(FeedbackRow.created_at)
            if conn.dialect.name == "sqlite"
            else cast(FeedbackRow.created_at, Date)
        )
        keys = (status, FeedbackRow.action, category, model, warnings, day, version)
        q = (
            select(*keys, func.count())
            .select_from(FeedbackRow)
            .outerjoin(ValidationRow, ValidationRow.attempt_id == FeedbackRow.attempt_id)
            .where(
                _decisions(),
                FeedbackRow.attempt_id.not_in(_override_attempts()),
                FeedbackRow.attempt_id.not_in(many_fb),
                FeedbackRow.attempt_id.not_in(many_v),
            )
            .group_by(*keys)
        )
        groups = [
            DecisionGroup(r[0], r[1], r[2], r[3], r[4] or None, _as_date(r[5]), r[7], r[6] or None)
            for r in await conn.execute(_in_range(q, since, until, batch_id))
        ]
        overridden = {r[0] for r in await conn.execute(_override_attempts())}
        special = {r[0] for r in await conn.execute(many_fb)} | {r[0] for r in await conn.execute(many_v)}
        special -= overridden
        last: dict[str, tuple[datetime, str]] = {}
        ids = sorted(special)
        for start in range(0, len(ids), _CHUNK):
            q = select(FeedbackRow.attempt_id, FeedbackRow.created_at, FeedbackRow.action).where(
                _decisions(), FeedbackRow.attempt_id.in_(ids[start : start + _CHUNK])
            )
            for attempt_id, at, action in await conn.execute(_in_range(q, since, until, batch_id)):
                if attempt_id not in last or at >= last[attempt_id][0]:
                    last[attempt_id] = (at, action)
    verdicts = await verdicts_for(store, last)
    for attempt_id, (at, action) in last.items():
        v = verdicts.get(attempt_id)
        groups.append(
            DecisionGroup(
                v.status if v else None,
                action,
                v.category if v else None,
                v.model if v else None,
                v.warnings if v else None,
                at.date(),
                1,
                v.version if v else None,
            )
        )
    return groups


def _as_date(value: object) -> date:
    if isinstance(value, datetime):
        return value.date()
    return value if isinstance(value, date) else date.fromisoformat(str(value))


async def override_rows(
    store: StoreBase,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    batch_id: str | None = None,
) -> list[OverrideRow]:
    """Every recorded analyst verdict (override), oldest first."""
    attempt = EventRow.payload[_OVERRIDE_ATTEMPT].as_string()
    q = select(EventRow.task_id, attempt, EventRow.created_at).where(
        EventRow.kind == EventKind.ANALYST_VERDICT_RECORDED.value
    )
    if since is not None:
        q = q.where(EventRow.created_at >= since)
    if until is not None:
        q = q.where(EventRow.created_at < until)
    if batch_id is not None:
        q = q.where(EventRow.task_id.in_(_batch_tasks(batch_id)))
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


async def batch_choices(store: StoreBase) -> list[tuple[str, str]]:
    """Every batch as (id, source file), oldest first: what a calibration can be narrowed to."""
    async with store.read_session() as s:
        rows = await s.execute(
            select(BatchRow.id, BatchRow.source).order_by(BatchRow.created_at, BatchRow.id)
        )
        return [(str(r[0]), str(r[1])) for r in rows]


__all__ = [
    "DecisionGroup",
    "OverrideRow",
    "Verdict",
    "batch_choices",
    "decision_groups",
    "override_rows",
    "verdicts_for",
]
