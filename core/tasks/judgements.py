"""Judgements that do not move a task: a blind first judgement and an independent second review.

Blind review: with the ``blind_review`` setting (or the reviewer named in ``blind_reviewers``) the
analyst records a first judgement before the validator's verdict is shown, then decides as usual
after the reveal. Both are events; calibration compares them (the anchoring rate). A second
review is another reviewer's independent judgement of a decided attempt; calibration sets it
beside the first (inter-analyst agreement) and lists disagreements for adjudication.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from core.config import Settings
from core.domain import FeedbackAction
from core.domain.event_codec import decode_as, encode
from core.domain.event_payloads import AnalystJudgement, SecondReviewRequest
from core.domain.facts import EventKind
from core.domain.reasons import check_reason, load_reasons
from core.domain.records import EventRecord, FeedbackRecord
from core.domain.standing import standing
from core.errors import InvalidRequest, RefusedAction
from core.tasks.review import allowed_actions

if TYPE_CHECKING:  # the desk imports this module at start for ``blind_for``; the store's SQL loads on use
    from core.store import Store

BLIND, SECOND = "blind", "second"


def blind_for(settings: Settings, reviewer: str) -> bool:
    """Whether this reviewer reviews blind: the workspace setting, or their name in the list."""
    return settings.blind_review or reviewer in settings.blind_reviewers


async def _judged(store: Store, task_id: str, attempt_id: str, reviewer: str, phase: str) -> bool:
    events = await store.get_task_events(task_id, kinds=[EventKind.ANALYST_JUDGEMENT_RECORDED])
    for e in events:
        j = decode_as(e, AnalystJudgement)
        if j is not None and (j.attempt_id, j.reviewer, j.phase) == (attempt_id, reviewer, phase):
            return True
    return False


async def record_judgement(
    store: Store,
    settings: Settings,
    task_id: str,
    decision: str,
    *,
    phase: str,
    reviewer: str,
    reason: str | None = None,
    note: str | None = None,
) -> AnalystJudgement:
    """Append a blind first judgement (on the task's awaiting attempt) or a second review (on the
    attempt whose decision stands). Refused, with nothing written, when it cannot count."""
    if decision not in {a.value for a in FeedbackAction}:
        raise InvalidRequest(f"unknown decision {decision!r}; use satisfied, revise or abandon")
    reason = check_reason(reason, load_reasons(settings.reasons))
    task = await store.get_task(task_id)
    attempts = await store.list_attempts(task.id, resolve=False)
    if not attempts or task.main_session_id is None:
        raise RefusedAction(f"task {task.id[:12]} has no attempt to judge")
    if phase == BLIND:
        if FeedbackAction(decision) not in allowed_actions(task):
            raise RefusedAction(
                f"task {task.id[:12]} is {task.status.value.replace('_', ' ')}: a blind judgement is "
                "recorded before the decision, while the task awaits one"
            )
        attempt = max(attempts, key=lambda a: a.index)
    elif phase == SECOND:
        from core.store.calibration_sql import standing_decisions

        standing = await standing_decisions(store, [a.id for a in attempts])
        if not standing:
            raise RefusedAction(f"task {task.id[:12]} has no decision standing to review a second time")
        attempt_id = max(standing, key=lambda a: standing[a].at)
        if standing[attempt_id].reviewer == reviewer:
            raise RefusedAction(
                f"{reviewer} made the decision on task {task.id[:12]}: a second review needs another reviewer"
            )
        attempt = next(a for a in attempts if a.id == attempt_id)
    else:
        raise InvalidRequest(f"unknown judgement phase {phase!r}")
    if await _judged(store, task.id, attempt.id, reviewer, phase):
        what = "a blind judgement" if phase == BLIND else "a second review"
        raise RefusedAction(
            f"{reviewer} already recorded {what} on attempt {attempt.index} of task {task.id[:12]}"
        )
    judgement = AnalystJudgement(
        attempt_index=attempt.index, attempt_id=attempt.id, reviewer=reviewer, decision=decision,
        phase=phase, reason=reason, note=note,
    )  # fmt: skip
    await store.append_event(task.main_session_id, *encode(judgement), task_id=task.id)
    return judgement


def second_review_due_on(
    task_id: str,
    feedback: Sequence[FeedbackRecord],
    events: Sequence[EventRecord],
    rate: float,
    reviewer: str,
) -> str | None:
    """The attempt of this task awaiting ``reviewer``'s second review, read from the task's own
    records (a dossier), or None: the rule of ``second_reviews_due`` for one task, so the desk can
    hide the first decision in the same turn that shows the task."""
    rows: dict[str, list[FeedbackRecord]] = defaultdict(list)
    for f in sorted(feedback, key=lambda f: f.created_at):
        if f.attempt_id is not None:
            rows[f.attempt_id].append(f)
    decided = [d for r in rows.values() if (d := standing((f.action, f) for f in r)) is not None]
    if not decided:
        return None
    first = max(decided, key=lambda d: d.created_at)
    attempt_id = first.attempt_id
    if first.reviewer == reviewer or attempt_id is None:
        return None
    requested = False
    for e in events:
        if e.kind == EventKind.ANALYST_JUDGEMENT_RECORDED:
            j = decode_as(e, AnalystJudgement)
            if j.phase == SECOND and j.attempt_id == attempt_id:
                return None  # reviewed a second time already (by anyone)
        elif e.kind == EventKind.SECOND_REVIEW_REQUESTED:
            requested = requested or decode_as(e, SecondReviewRequest).attempt_id == attempt_id
    return attempt_id if requested or sampled(task_id, rate) else None


def sampled(task_id: str, rate: float) -> bool:
    """Whether ``second_review_rate`` picks this task: a fixed hash of its id, so the sample is the
    same on every desk and every day, and raising the rate only adds tasks."""
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) / 0x1_0000_0000 < rate


class DueReview(BaseModel):
    task_id: str
    attempt_index: int
    decided_by: str
    why: str  # "sampled" or "requested"


async def request_second_review(store: Store, task_id: str, *, reviewer: str) -> int:
    """Queue the decided attempt of a task for a second review by someone else; its attempt index."""
    from core.store.calibration_sql import second_review_requests, standing_by_task

    task = await store.get_task(task_id)
    standing = (await standing_by_task(store, [task.id])).get(task.id)
    if standing is None or task.main_session_id is None:
        raise RefusedAction(f"task {task.id[:12]} has no decision standing to review a second time")
    attempt_id, _ = standing
    if attempt_id in await second_review_requests(store):
        raise RefusedAction(f"task {task.id[:12]} is already queued for a second review")
    attempt = next(a for a in await store.list_attempts(task.id, resolve=False) if a.id == attempt_id)
    request = SecondReviewRequest(attempt_index=attempt.index, attempt_id=attempt.id, requested_by=reviewer)
    await store.append_event(task.main_session_id, *encode(request), task_id=task.id)
    return attempt.index


async def second_reviews_due(store: Store, settings: Settings, reviewer: str) -> list[DueReview]:
    """Decided tasks sampled (``second_review_rate``) or queued for a second review that ``reviewer``
    may give: someone else decided them and nobody has reviewed them a second time yet."""
    from core.store.calibration_sql import (
        decided_task_ids,
        judgement_rows,
        second_review_requests,
        standing_by_task,
    )

    requested = await second_review_requests(store)
    done = {j.attempt_id for j in await judgement_rows(store) if j.phase == SECOND}
    candidates = [t for t in await decided_task_ids(store) if sampled(t, settings.second_review_rate)]
    standing = await standing_by_task(store, candidates)
    if requested:
        standing |= await standing_by_task(store, set(requested.values()))
    due = []
    attempts: dict[str, int] = {}
    for task_id, (attempt_id, d) in sorted(standing.items(), key=lambda kv: kv[1][1].at):
        if attempt_id in done or d.reviewer == reviewer:
            continue
        why = "requested" if attempt_id in requested else "sampled"
        if why == "sampled" and not sampled(task_id, settings.second_review_rate):
            continue
        if attempt_id not in attempts:
            attempts[attempt_id] = next(
                a.index for a in await store.list_attempts(task_id, resolve=False) if a.id == attempt_id
            )
        due.append(
            DueReview(task_id=task_id, attempt_index=attempts[attempt_id], decided_by=d.reviewer, why=why)
        )
    return due


__all__ = [
    "BLIND",
    "SECOND",
    "DueReview",
    "blind_for",
    "record_judgement",
    "request_second_review",
    "sampled",
    "second_review_due_on",
    "second_reviews_due",
]
