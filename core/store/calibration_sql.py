"""The rows judge calibration reads: each decided attempt's analyst decision beside its verdict.

Three set-based queries, each one pass over its table: decisions (feedback rows joined to the
verdict of the attempt they decided), overrides (``analyst_verdict_recorded`` events) and the
verdicts of overridden attempts no feedback row named. The JSON facts (validator model, warning
codes) are extracted by the database (``JSON_EXTRACT`` on SQLite, ``->>`` on PostgreSQL) so no
debug blob crosses into Python. Folding rows into figures is ``core.calibration``'s job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Date, and_, case, cast, func, select

from core.domain.event_codec import payload_key
from core.domain.event_payloads import (
    AnalystJudgement,
    AnalystVerdictRecord,
    SecondReviewRequest,
    ValidationDebug,
)
from core.domain.facts import EventKind
from core.domain.standing import DECIDING, standing
from core.domain.status import FeedbackAction, ValidationStatus
from core.store.base import StoreBase
from core.store.models import BatchRow, EventRow, FeedbackRow, TaskRow, ValidationRow

# JSON keys read inside the database, named by the models that write them (a rename fails at import).
_VALIDATOR_MODEL = payload_key(ValidationDebug, "validator_model")
_WARNINGS = payload_key(ValidationDebug, "warnings")
_VALIDATOR_VERSION = payload_key(ValidationDebug, "validator_version")
_OVERRIDE_ATTEMPT = payload_key(AnalystVerdictRecord, "attempt_id")
_OVERRIDE_STATUS = payload_key(AnalystVerdictRecord, "status")
_OVERRIDE_REVIEWER = payload_key(AnalystVerdictRecord, "reviewer")
_OVERRIDE_REASON = payload_key(AnalystVerdictRecord, "reason")

_CHUNK = 500
_TURN = 500  # rows turned into Python objects between two turns of the event loop


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
    status: str = ""  # the analyst's own verdict
    reviewer: str = ""
    reason: str | None = None


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
    """How many standing decisions share one verdict, decision, category, model, week, warnings,
    reviewer, reason and validator version (and task, when cases were asked for)."""

    status: str | None  # None: the attempt was never validated
    action: str  # satisfied | revise | abandon
    category: str | None
    model: str | None
    warnings: str | None
    day: date  # the decision's day, or the Monday of its week (calibration counts weeks)
    n: int
    reviewer: str = ""
    reason: str | None = None
    task_ids: tuple[str, ...] = ()  # only when cases were asked for
    version: str | None = None  # the verdict's validator_version (None: before versions, or none)


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
    """Attempts with more than one feedback row of any kind (a decision undone, reopened or
    repeated), and attempts with more than one verdict."""
    fb = (
        select(FeedbackRow.attempt_id)
        .where(FeedbackRow.attempt_id.is_not(None))
        .group_by(FeedbackRow.attempt_id)
    )
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


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _within(at: datetime, since: datetime | None, until: datetime | None) -> bool:
    if since is not None and _aware(at) < _aware(since):
        return False
    return until is None or _aware(at) < _aware(until)


@dataclass(frozen=True, slots=True)
class _Standing:
    task_id: str
    at: datetime
    action: str
    reviewer: str
    reason: str | None


async def _standing_where(conn: Any, where: Any, batch_id: str | None) -> dict[str, _Standing]:
    """The standing decision of each attempt ``where`` picks, replaying all its feedback rows in order."""
    rows: dict[str, list[tuple[str, _Standing]]] = {}
    q = select(
        FeedbackRow.attempt_id, FeedbackRow.task_id, FeedbackRow.created_at, FeedbackRow.action,
        FeedbackRow.reviewer, FeedbackRow.reason,
    ).where(where)  # fmt: skip
    result = await conn.execute(_in_range(q, None, None, batch_id))
    for i, (attempt_id, task_id, at, action, who, reason) in enumerate(result):
        if i % _TURN == _TURN - 1:
            await asyncio.sleep(0)  # the desk's GUI paints between stretches
        rows.setdefault(attempt_id, []).append((action, _Standing(task_id, at, action, who, reason)))
    found: dict[str, _Standing] = {}
    for i, (attempt_id, history) in enumerate(rows.items()):
        if i % _TURN == _TURN - 1:
            await asyncio.sleep(0)
        history.sort(key=lambda pair: pair[1].at)
        last = standing(history)
        if last is not None:
            found[attempt_id] = last
    return found


async def _standing_of(conn: Any, ids: list[str], batch_id: str | None) -> dict[str, _Standing]:
    """The standing decision of each named attempt (a few: judged ones), in chunks of ids."""
    found: dict[str, _Standing] = {}
    for start in range(0, len(ids), _CHUNK):
        found |= await _standing_where(
            conn, FeedbackRow.attempt_id.in_(ids[start : start + _CHUNK]), batch_id
        )
    return found


def _week_start(conn: Any, at: Any) -> Any:
    """The Monday on or before ``at``'s day (calibration counts per ISO week): grouping by week, not
    day, leaves a seventh of the groups to cross into Python."""
    if conn.dialect.name == "sqlite":  # back six days, then on to the next Monday (or stay on it)
        return func.date(at, "-6 days", "weekday 1")
    return cast(func.date_trunc("week", at), Date)


async def _common_groups(
    conn: Any, since: datetime | None, until: datetime | None, batch_id: str | None, with_tasks: bool
) -> list[DecisionGroup]:
    """The attempts with one feedback row and at most one verdict, grouped in the database."""
    status, category, model, warnings, _, version = _verdict_columns()
    many_fb, many_v = _repeated()
    keys: tuple[Any, ...] = (
        status, FeedbackRow.action, category, model, warnings, _week_start(conn, FeedbackRow.created_at), FeedbackRow.reviewer, FeedbackRow.reason,
        version,
    )  # fmt: skip
    counted: tuple[Any, ...] = (func.count(),)
    if with_tasks:  # each group's task ids as one comma-joined text (ids are hex): no row per task
        joined = (
            func.group_concat(FeedbackRow.task_id, ",")
            if conn.dialect.name == "sqlite"
            else func.string_agg(FeedbackRow.task_id, ",")
        )
        counted = (*counted, joined)
    q = (
        select(*keys, *counted)
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
    groups: list[DecisionGroup] = []
    for r in await conn.execute(_in_range(q, since, until, batch_id)):
        ids = tuple(str(r[10]).split(",")) if with_tasks and r[10] else ()
        groups.append(
            DecisionGroup(
                r[0], r[1], r[2], r[3], r[4] or None, _as_date(r[5]), r[9], r[6], r[7], ids, r[8] or None
            )
        )
    return groups


async def decision_groups(
    store: StoreBase,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    batch_id: str | None = None,
    with_tasks: bool = False,
) -> list[DecisionGroup]:
    """Attempts decided by feedback (not overridden) whose decision stands, counted per verdict and decision.

    The common case (one feedback row, at most one verdict) is one ``GROUP BY`` over the join, so
    only a few hundred groups cross into Python for 100,000 decisions. Attempts with more feedback
    rows (a decision undone, a task reopened) or more verdicts are left out of it and folded row by
    row, each once: the decision that stands (``core.domain.standing``), if it falls in range,
    against its latest verdict. ``with_tasks`` lists each group's task ids (for ``--cases``).
    """

    async def common() -> list[DecisionGroup]:
        async with store.read_session() as s:
            return await _common_groups(await s.connection(), since, until, batch_id, with_tasks)

    async def special() -> dict[str, _Standing]:
        many_fb, many_v = _repeated()
        # One pass: every feedback row of the attempts decided or judged more than once, not overridden.
        where = and_(
            FeedbackRow.attempt_id.in_(many_fb.union(many_v)),
            FeedbackRow.attempt_id.not_in(_override_attempts()),
        )
        async with store.read_session() as s:
            found = await _standing_where(await s.connection(), where, batch_id)
        return {a: d for a, d in found.items() if d.action in DECIDING and _within(d.at, since, until)}

    # Two read connections at once: SQLite in WAL mode and PostgreSQL both read in parallel.
    groups, last = await asyncio.gather(common(), special())
    verdicts = await verdicts_for(store, last)
    for attempt_id, d in last.items():
        v = verdicts.get(attempt_id)
        groups.append(
            DecisionGroup(
                v.status if v else None,
                d.action,
                v.category if v else None,
                v.model if v else None,
                v.warnings if v else None,
                d.at.date(),
                1,
                d.reviewer,
                d.reason,
                (d.task_id,) if with_tasks else (),
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
    p = EventRow.payload
    attempt = p[_OVERRIDE_ATTEMPT].as_string()
    q = select(
        EventRow.task_id,
        attempt,
        EventRow.created_at,
        p[_OVERRIDE_STATUS].as_string(),
        p[_OVERRIDE_REVIEWER].as_string(),
        p[_OVERRIDE_REASON].as_string(),
    ).where(EventRow.kind == EventKind.ANALYST_VERDICT_RECORDED.value)
    if since is not None:
        q = q.where(EventRow.created_at >= since)
    if until is not None:
        q = q.where(EventRow.created_at < until)
    if batch_id is not None:
        q = q.where(EventRow.task_id.in_(_batch_tasks(batch_id)))
    async with store.read_session() as s:
        result = await s.execute(q.order_by(EventRow.id))
        out: list[OverrideRow] = []
        for i, r in enumerate(result):  # each row's time is parsed here: in stretches, the GUI paints between
            if i % _TURN == _TURN - 1:
                await asyncio.sleep(0)
            out.append(
                OverrideRow(str(r[0]), str(r[1]), r[2], str(r[3] or ""), str(r[4] or ""), r[5] or None)
            )
        return out


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


# --------------------------------------------------------------------------- judgements and drift
_J_ATTEMPT = payload_key(AnalystJudgement, "attempt_id")
_J_REVIEWER = payload_key(AnalystJudgement, "reviewer")
_J_DECISION = payload_key(AnalystJudgement, "decision")
_J_PHASE = payload_key(AnalystJudgement, "phase")
_LLM_CALLS = payload_key(ValidationDebug, "llm_calls")
_SCHEMA_RETRIES = payload_key(ValidationDebug, "schema_retries")
_MODEL_USED = payload_key(ValidationDebug, "model_used")
_ERROR = payload_key(ValidationDebug, "error")


@dataclass(frozen=True, slots=True)
class JudgementRow:
    task_id: str
    attempt_id: str
    reviewer: str
    decision: str
    phase: str
    at: datetime


@dataclass(frozen=True, slots=True)
class StandingDecision:
    task_id: str
    action: str
    reviewer: str
    at: datetime
    verdict: str | None  # the attempt's latest verdict status


async def judgement_rows(store: StoreBase, batch_id: str | None = None) -> list[JudgementRow]:
    """Every blind first judgement and second review, oldest first (few: one per judged attempt)."""
    p = EventRow.payload
    q = select(
        EventRow.task_id, p[_J_ATTEMPT].as_string(), p[_J_REVIEWER].as_string(), p[_J_DECISION].as_string(),
        p[_J_PHASE].as_string(), EventRow.created_at,
    ).where(EventRow.kind == EventKind.ANALYST_JUDGEMENT_RECORDED.value)  # fmt: skip
    if batch_id is not None:
        q = q.where(EventRow.task_id.in_(_batch_tasks(batch_id)))
    async with store.read_session() as s:
        rows = await s.execute(q.order_by(EventRow.id))
        return [JudgementRow(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), r[5]) for r in rows]


async def standing_decisions(store: StoreBase, attempt_ids: Iterable[str]) -> dict[str, StandingDecision]:
    """The standing decision (``core.domain.standing``) of each named attempt, with its verdict."""
    ids = sorted(set(attempt_ids))
    async with store.read_session() as s:
        found = await _standing_of(await s.connection(), ids, None)
    verdicts = await verdicts_for(store, found)
    return {
        a: StandingDecision(
            d.task_id, d.action, d.reviewer, d.at, v.status if (v := verdicts.get(a)) else None
        )
        for a, d in found.items()
        if d.action in DECIDING
    }


@dataclass(frozen=True, slots=True)
class DriftGroup:
    """Verdicts of one validator model on one day sharing a warnings list and a fallback flag."""

    model: str | None
    day: date
    warnings: str | None
    fell_back: bool  # the model that answered was not the validator model asked for
    verdicts: int
    llm_calls: int
    schema_retries: int
    stuck_loops: int = 0  # verdicts whose structured output stopped on the same schema error repeated
    canned: int = 0  # verdicts that fell to the last tier: no usable answer, a validator_error


async def drift_groups(store: StoreBase, since: datetime | None, until: datetime | None) -> list[DriftGroup]:
    """Every verdict (decided or not) grouped per model, day, warnings and fallback, in one pass."""
    debug = ValidationRow.debug
    model = debug[_VALIDATOR_MODEL].as_string()
    used = debug[_MODEL_USED].as_string()
    warnings = debug[_WARNINGS].as_string()
    async with store.read_session() as s:
        conn = await s.connection()
        day = (
            func.date(ValidationRow.created_at)
            if conn.dialect.name == "sqlite"
            else cast(ValidationRow.created_at, Date)
        )
        fell_back = and_(used.is_not(None), model.is_not(None), used != model)
        keys = (model, day, warnings, fell_back)
        stuck = debug[_ERROR].as_string().like("%schema-stuck-loop%")
        canned = ValidationRow.status == ValidationStatus.VALIDATOR_ERROR.value
        q = select(
            *keys, func.count(), func.coalesce(func.sum(debug[_LLM_CALLS].as_integer()), 0),
            func.coalesce(func.sum(debug[_SCHEMA_RETRIES].as_integer()), 0),
            func.sum(case((stuck, 1), else_=0)), func.sum(case((canned, 1), else_=0)),
        ).group_by(*keys)  # fmt: skip
        if since is not None:
            q = q.where(ValidationRow.created_at >= since)
        if until is not None:
            q = q.where(ValidationRow.created_at < until)
        return [
            DriftGroup(
                r[0],
                _as_date(r[1]),
                r[2] or None,
                bool(r[3]),
                int(r[4]),
                int(r[5]),
                int(r[6]),
                int(r[7] or 0),
                int(r[8] or 0),
            )
            for r in await conn.execute(q)
        ]


async def decided_task_ids(store: StoreBase) -> list[str]:
    """Every task with a satisfied, revise or abandon on record (whether it still stands or not)."""
    async with store.read_session() as s:
        rows = await s.execute(select(FeedbackRow.task_id).where(_decisions()).distinct())
        return sorted(str(r[0]) for r in rows)


async def standing_by_task(
    store: StoreBase, task_ids: Iterable[str]
) -> dict[str, tuple[str, StandingDecision]]:
    """Each named task's latest standing decision as (attempt id, decision); tasks with none left out."""
    ids = sorted(set(task_ids))
    found: dict[str, _Standing] = {}
    attempt_of: dict[str, str] = {}
    async with store.read_session() as s:
        conn = await s.connection()
        for start in range(0, len(ids), _CHUNK):
            where = FeedbackRow.task_id.in_(ids[start : start + _CHUNK])  # tasks.id is indexed on feedback
            for attempt_id, d in (await _standing_where(conn, where, None)).items():
                if d.action in DECIDING and (d.task_id not in found or d.at >= found[d.task_id].at):
                    found[d.task_id] = d
                    attempt_of[d.task_id] = attempt_id
    verdicts = await verdicts_for(store, attempt_of.values())
    return {
        t: (
            a,
            StandingDecision(
                d.task_id, d.action, d.reviewer, d.at, v.status if (v := verdicts.get(a)) else None
            ),
        )
        for t, d in found.items()
        if (a := attempt_of[t])
    }


async def second_review_requests(store: StoreBase) -> dict[str, str]:
    """The attempts someone queued for a second review, each with its task id."""
    attempt = EventRow.payload[payload_key(SecondReviewRequest, "attempt_id")].as_string()
    q = select(attempt, EventRow.task_id).where(EventRow.kind == EventKind.SECOND_REVIEW_REQUESTED.value)
    async with store.read_session() as s:
        return {str(r[0]): str(r[1]) for r in await s.execute(q) if r[0]}


__all__ = [
    "DecisionGroup",
    "DriftGroup",
    "JudgementRow",
    "OverrideRow",
    "StandingDecision",
    "Verdict",
    "batch_choices",
    "decided_task_ids",
    "decision_groups",
    "drift_groups",
    "judgement_rows",
    "override_rows",
    "second_review_requests",
    "standing_by_task",
    "standing_decisions",
    "verdicts_for",
]
