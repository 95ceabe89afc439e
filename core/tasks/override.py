"""An analyst's own verdict on an attempt, recorded beside the validator's and never over it.

Review tools that let a person edit the judge's score lose the judge's reasoning (the issue cites
Inspect #4548). Here an override is an event on the task's log (``analyst_verdict_recorded``):
the validator's row is untouched, the log is append-only, a later override is a new event, and no
schema change is needed. Readers take the last override per attempt.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from core.domain.event_codec import decode_as, encode
from core.domain.event_payloads import AnalystVerdictRecord
from core.domain.facts import EventKind
from core.domain.status import ValidationStatus
from core.domain.validation import FailureCategory
from core.errors import InvalidRequest
from core.search.index import index_override
from core.store import EventRecord, Store
from core.tasks.dossier import TaskDossier
from core.tasks.policy import ensure_writable


class AnalystVerdict(BaseModel):
    attempt_index: int
    attempt_id: str
    status: ValidationStatus
    category: FailureCategory
    note: str
    reviewer: str
    created_at: datetime | None = None
    reason: str | None = None


def _parse(value: str, enum: type[ValidationStatus] | type[FailureCategory], what: str) -> str:
    allowed = [m.value for m in enum]
    if value not in allowed:
        raise InvalidRequest(f"unknown {what} {value!r}; use one of: {', '.join(allowed)}")
    return value


async def record_override(
    store: Store,
    task_id: str,
    *,
    status: str,
    category: str = "none",
    note: str = "",
    reviewer: str,
    attempt_index: int | None = None,
    reason: str | None = None,
) -> AnalystVerdict:
    """Append the analyst's verdict on an attempt (default: the latest); the validator's stays as is."""
    status = _parse(status, ValidationStatus, "status")
    category = _parse(category, FailureCategory, "category")
    task = await store.get_task(task_id)
    ensure_writable(task)  # an imported task's signed history is not extended, not even by a verdict
    attempts = await store.list_attempts(task.id, resolve=False)  # ids and indexes only
    if not attempts:
        raise InvalidRequest(f"task {task.id[:12]} has no attempt to give a verdict on")
    if attempt_index is None:
        attempt = max(attempts, key=lambda a: a.index)
    else:
        found = [a for a in attempts if a.index == attempt_index]
        if not found:
            raise InvalidRequest(f"task {task.id[:12]} has no attempt {attempt_index}")
        attempt = found[0]
    if task.main_session_id is None:
        raise InvalidRequest(f"task {task.id[:12]} has no session to record a verdict in")
    verdict = AnalystVerdict(
        attempt_index=attempt.index,
        attempt_id=attempt.id,
        status=ValidationStatus(status),
        category=FailureCategory(category),
        note=note,
        reviewer=reviewer,
        reason=reason,
    )
    event = await store.append_event(
        task.main_session_id,
        *encode(AnalystVerdictRecord(**verdict.model_dump(exclude={"created_at"}))),
        task_id=task.id,
    )
    await index_override(store, task.id, attempt.index, event.id, note)
    return verdict.model_copy(update={"created_at": event.created_at})


def overrides_from_events(events: list[EventRecord]) -> dict[int, AnalystVerdict]:
    """The last analyst verdict per attempt index, from a task's events."""
    found: dict[int, AnalystVerdict] = {}
    for e in events:
        if e.kind == EventKind.ANALYST_VERDICT_RECORDED:
            recorded = decode_as(e, AnalystVerdictRecord)
            v = AnalystVerdict.model_validate({**recorded.model_dump(), "created_at": e.created_at})
            found[v.attempt_index] = v
    return found


def dossier_overrides(dossier: TaskDossier) -> dict[int, AnalystVerdict]:
    return overrides_from_events(dossier.events)


def format_override(v: AnalystVerdict) -> str:
    note = f" — {v.note}" if v.note else ""
    why = f", reason {v.reason}" if v.reason else ""
    return f"analyst verdict ({v.reviewer}): {v.status.value}, category {v.category.value}{why}{note}"


__all__ = [
    "AnalystVerdict",
    "dossier_overrides",
    "format_override",
    "overrides_from_events",
    "record_override",
]
