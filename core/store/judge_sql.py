"""The rows judge measurement reads: decided attempts, live verdicts' facts, shadow sessions.

A decided attempt is one an analyst gave a decision on: their last override of it (an
``analyst_verdict_recorded`` event) when there is one, else their last feedback decision
(satisfied, revise, abandon). JSON facts of a verdict (latency, cost, validator version) are
extracted by the database so no debug blob crosses into Python. ``core.judge`` folds them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, select

from core.domain.event_codec import payload_key
from core.domain.event_payloads import AnalystVerdictRecord, ShadowVerdict, TokenUsage, ValidationDebug
from core.domain.facts import EventKind
from core.domain.records import AttemptRecord, FeedbackRecord, TaskRecord, ValidationRecord
from core.domain.standing import DECIDING, REOPEN, UNDO
from core.domain.standing import standing as standing_row
from core.errors import StoreError
from core.store.base import StoreBase
from core.store.models import AttemptRow, EventRow, FeedbackRow, SessionRow, TaskRow, ValidationRow

SHADOW_SESSION_KIND = "shadow"
JUDGE_SESSION_KIND = "judge"
_CHUNK = 500
_OVERRIDE_ATTEMPT = payload_key(AnalystVerdictRecord, "attempt_id")
_OVERRIDE_STATUS = payload_key(AnalystVerdictRecord, "status")
_LATENCY = payload_key(ValidationDebug, "latency_s")
_USAGE = payload_key(ValidationDebug, "usage")
_COST = payload_key(TokenUsage, "cost_usd")
_VERSION = payload_key(ValidationDebug, "validator_version")


@dataclass(frozen=True, slots=True)
class DecidedAttempt:
    """One attempt an analyst decided, with the decision that stands."""

    task_id: str
    attempt_id: str
    attempt_index: int
    title: str
    decision: str  # satisfied | revise | abandon | overridden
    override_status: str | None  # the analyst's own verdict when overridden
    decided_at: datetime


@dataclass(frozen=True, slots=True)
class VerdictFacts:
    """What comparing judges needs of one verdict, live or shadow."""

    attempt_id: str
    status: str
    score: float | None
    category: str | None
    latency_s: float | None
    cost_usd: float | None
    version: str | None
    issues: tuple[str, ...] = ()


def _chunks(ids: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield list(ids[start : start + _CHUNK])


async def decided_attempts(
    store: StoreBase,
    *,
    since: datetime | None = None,
    batch_id: str | None = None,
    task_ids: Sequence[str] | None = None,
) -> list[DecidedAttempt]:
    """Every decided attempt (its standing decision on or after ``since``), oldest decision first."""
    standing: dict[str, tuple[datetime, str, str, str | None]] = {}  # attempt -> at, task, decision, override
    overridden: set[str] = set()
    fb = select(
        FeedbackRow.task_id, FeedbackRow.attempt_id, FeedbackRow.action, FeedbackRow.created_at
    ).where(FeedbackRow.action.in_([*DECIDING, UNDO, REOPEN]), FeedbackRow.attempt_id.is_not(None))
    attempt = EventRow.payload[_OVERRIDE_ATTEMPT].as_string()
    ov = select(
        EventRow.task_id, attempt, EventRow.payload[_OVERRIDE_STATUS].as_string(), EventRow.created_at
    )
    ov = ov.where(EventRow.kind == EventKind.ANALYST_VERDICT_RECORDED.value, attempt.is_not(None))
    async with store.read_session() as s:
        for task_id, attempt_id, status, at in await s.execute(ov.order_by(EventRow.id)):
            standing[str(attempt_id)] = (at, str(task_id), "overridden", str(status) if status else None)
            overridden.add(str(attempt_id))
        # the decision that stands, as calibration counts it: an undone or reopened one does not
        histories: dict[str, list[tuple[str, tuple[datetime, str, str, str | None]]]] = {}
        for task_id, attempt_id, action, at in await s.execute(fb.order_by(FeedbackRow.created_at)):
            if attempt_id not in overridden:
                histories.setdefault(str(attempt_id), []).append(
                    (str(action), (at, str(task_id), str(action), None))
                )
        for attempt_id, history in histories.items():
            last = standing_row(history)
            if last is not None:
                standing[attempt_id] = last
        wanted = set(task_ids) if task_ids is not None else None
        ids = sorted(a for a, v in standing.items() if wanted is None or v[1] in wanted)
        facts: dict[str, tuple[int, str, str | None]] = {}
        for part in _chunks(ids):
            q = (
                select(AttemptRow.id, AttemptRow.index, TaskRow.title, TaskRow.batch_id)
                .join(TaskRow, TaskRow.id == AttemptRow.task_id)
                .where(AttemptRow.id.in_(part))
            )
            for attempt_id, index, title, batch in await s.execute(q):
                facts[attempt_id] = (int(index), str(title), batch)
    out = []
    for attempt_id in ids:
        at, task_id, decision, override = standing[attempt_id]
        if attempt_id not in facts or (since is not None and at < since):
            continue
        index, title, batch = facts[attempt_id]
        if batch_id is not None and batch != batch_id:
            continue
        out.append(DecidedAttempt(task_id, attempt_id, index, title, decision, override, at))
    return sorted(out, key=lambda d: (d.decided_at, d.attempt_id))


async def live_verdicts(store: StoreBase, attempt_ids: Sequence[str]) -> dict[str, VerdictFacts]:
    """The latest verdict recorded on each named attempt (attempts with none are left out)."""
    debug = ValidationRow.debug
    found: dict[str, tuple[datetime, VerdictFacts]] = {}
    async with store.read_session() as s:
        for part in _chunks(list(attempt_ids)):
            q = select(
                ValidationRow.attempt_id,
                ValidationRow.status,
                ValidationRow.score,
                ValidationRow.category,
                debug[_LATENCY].as_float(),
                debug[_USAGE][_COST].as_float(),
                debug[_VERSION].as_string(),
                ValidationRow.created_at,
                ValidationRow.result,  # the verdict's words (small; the debug record stays in the database)
            ).where(ValidationRow.attempt_id.in_(part))
            for row in await s.execute(q):
                attempt_id, status, score, category, latency, cost, version, at, result = row
                prev = found.get(attempt_id)
                if prev is None or at >= prev[0]:
                    issues = result.get("issues", []) if isinstance(result, dict) else []
                    facts = VerdictFacts(
                        attempt_id, str(status), score, category, latency, cost, version or None,
                        tuple(str(i) for i in issues),
                    )  # fmt: skip
                    found[attempt_id] = (at, facts)
    return {k: v for k, (_, v) in found.items()}


@dataclass(frozen=True, slots=True)
class SessionFacts:
    id: str
    label: str
    created_at: datetime


async def sessions_of_kind(store: StoreBase, kind: str, label: str | None = None) -> list[SessionFacts]:
    """Sessions belonging to no task, of one kind (and label), oldest first."""
    q: Any = select(SessionRow.id, SessionRow.label, SessionRow.created_at).where(
        SessionRow.kind == kind, SessionRow.task_id.is_(None)
    )
    if label is not None:
        q = q.where(SessionRow.label == label)
    async with store.read_session() as s:
        rows = await s.execute(q.order_by(SessionRow.created_at, SessionRow.id))
        return [SessionFacts(str(r[0]), str(r[1]), r[2]) for r in rows]


__all__ = [
    "JUDGE_SESSION_KIND",
    "SHADOW_SESSION_KIND",
    "CaseRows",
    "DecidedAttempt",
    "SessionFacts",
    "VerdictFacts",
    "case_rows",
    "decided_attempts",
    "has_shadow_verdict",
    "live_verdicts",
    "sessions_of_kind",
]


_SHADOW_ATTEMPT = payload_key(ShadowVerdict, "attempt_id")


async def has_shadow_verdict(store: StoreBase, session_id: str, attempt_id: str) -> bool:
    """The shadow session already holds a verdict on the attempt (read with a fresh snapshot, so a
    verdict another worker committed a moment ago counts)."""
    q = (
        select(EventRow.id)
        .where(
            EventRow.session_id == session_id,
            EventRow.kind == EventKind.SHADOW_VERDICT_RECORDED.value,
            EventRow.payload[_SHADOW_ATTEMPT].as_string() == attempt_id,
        )
        .limit(1)
    )
    async with store.read_session() as s:
        return (await s.execute(q)).first() is not None


@dataclass(frozen=True, slots=True)
class CaseRows:
    """A task's rows a replayed verdict is rebuilt from (its packets unresolved)."""

    task: TaskRecord
    attempts: list[AttemptRecord]
    validations: list[ValidationRecord]
    feedback: list[FeedbackRecord]


async def case_rows(store: StoreBase, task_id: str) -> CaseRows:
    """The task, its attempts, verdicts and feedback in one read (one snapshot, and on SQLite one
    worker-thread hop): a replay reads them for every verdict, and four reads of their own, each
    a unit of work on the event loop, cost it more than the verdict's own work."""
    task, attempts, validations, feedback = await store.read_sync(lambda conn: _case_rows(conn, task_id))
    if task is None:
        raise StoreError(f"no task with id {task_id!r}")
    return CaseRows(
        TaskRecord.model_validate(task._mapping),
        [AttemptRecord.model_validate(r._mapping) for r in attempts],
        [ValidationRecord.model_validate(r._mapping) for r in validations],
        [FeedbackRecord.model_validate(r._mapping) for r in feedback],
    )


_Rows = list[Row[Any]]


def _case_rows(conn: Connection, task_id: str) -> tuple[Row[Any] | None, _Rows, _Rows, _Rows]:
    task = conn.execute(select(TaskRow).where(TaskRow.id == task_id)).first()
    if task is None:
        return None, [], [], []
    attempts = select(AttemptRow).where(AttemptRow.task_id == task_id).order_by(AttemptRow.index)
    validations = (
        select(ValidationRow).where(ValidationRow.task_id == task_id).order_by(ValidationRow.created_at)
    )
    feedback = select(FeedbackRow).where(FeedbackRow.task_id == task_id).order_by(FeedbackRow.created_at)
    return (
        task,
        list(conn.execute(attempts).all()),
        list(conn.execute(validations).all()),
        list(conn.execute(feedback).all()),
    )
