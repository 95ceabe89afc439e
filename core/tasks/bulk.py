"""Bulk work on a selection of tasks: satisfied, abandon or assign, one task at a time.

A bulk action is many ordinary decisions, not a new kind of write: every task gets its own
decision through ``ReviewService.feedback`` with the version the analyst confirmed, so each has its
own event and feedback row, and a task that changed since the confirmation fails its version
check and is reported by name instead of being overwritten. What a task allows comes from the
same rules as one decision (``allowed_actions``, read-only, claims): the plan says up front which
tasks will be skipped and why, so the confirmation can name the counts.

Cancellation is cooperative and only between tasks (``Cancellation``): a decision is never cut
in half, and the result says exactly how many were done.

Assigning has no concept of its own: it is a claim held by the assignee with a long lease
(``ASSIGN_LEASE``), plus a ``claim_assigned`` event naming who assigned it, so the assignee's
"assigned to me" queue and every other desk see it as held.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum

from core.domain import FeedbackAction
from core.domain.claims import ClaimRecord
from core.domain.event_payloads import ClaimAssignment
from core.domain.records import TaskRecord
from core.errors import EvidenceDeskError, RefusedAction
from core.store import new_event
from core.tasks.claims import Claims
from core.tasks.review import ReviewService, allowed_actions, read_only_reason
from core.tasks.state_machine import IllegalTransition

ASSIGN_LEASE = timedelta(days=7)


class BulkAction(StrEnum):
    SATISFIED = "satisfied"
    ABANDON = "abandon"
    ASSIGN = "assign"

    @property
    def verb(self) -> str:
        return {"satisfied": "close as satisfied", "abandon": "abandon", "assign": "assign"}[self.value]


@dataclass(frozen=True)
class BulkSkip:
    """A task left alone (or that failed), with the one sentence that says why."""

    task_id: str
    title: str
    reason: str

    def line(self) -> str:
        return f"{self.task_id[:8]} “{self.title}”: {self.reason}"


@dataclass
class BulkPlan:
    """What a confirmed bulk action will do: the tasks (at the versions shown) and the skipped ones."""

    action: BulkAction
    ready: list[TaskRecord]
    skipped: list[BulkSkip]
    assignee: str | None = None

    def confirmation(self) -> str:
        """The question the desk asks, naming the counts."""
        target = f" to {self.assignee}" if self.assignee else ""
        text = f"{self.action.verb.capitalize()} {len(self.ready)} task(s){target}?"
        if self.skipped:
            text += f" {len(self.skipped)} skipped:\n" + "\n".join(s.line() for s in self.skipped[:10])
            if len(self.skipped) > 10:
                text += f"\n… and {len(self.skipped) - 10} more"
        return text


@dataclass(frozen=True)
class BulkProgress:
    """One step: ``done`` of ``total`` tasks handled; ``failed`` set when this task's step failed."""

    done: int
    total: int
    task_id: str
    title: str
    failed: str | None = None


@dataclass
class BulkResult:
    action: BulkAction
    done: list[str] = field(default_factory=list)
    failed: list[BulkSkip] = field(default_factory=list)
    skipped: list[BulkSkip] = field(default_factory=list)
    cancelled: bool = False
    total: int = 0

    def summary(self) -> str:
        text = f"{self.action.verb.capitalize()}: {len(self.done)} of {self.total} done"
        if self.cancelled:
            text += " (cancelled)"
        if self.failed:
            text += f"; {len(self.failed)} failed: " + "; ".join(f.line() for f in self.failed[:5])
        if self.skipped:
            text += f"; {len(self.skipped)} skipped"
        return text


class Cancellation:
    """A flag checked between tasks: set from anywhere (a Cancel button, a progress callback)."""

    def __init__(self) -> None:
        self._set = False

    def cancel(self) -> None:
        self._set = True

    @property
    def cancelled(self) -> bool:
        return self._set


def _refusal(
    task: TaskRecord, action: BulkAction, holder: ClaimRecord | None, me: str, assignee: str | None
) -> str | None:
    reason = read_only_reason(task)
    if reason is not None:
        return reason
    if holder is not None and holder.reviewer not in (me, assignee):
        return holder.describe()
    if action is BulkAction.ASSIGN:
        return (
            f"{task.status.value.replace('_', ' ')} tasks are finished" if task.status.is_terminal else None
        )
    wanted = FeedbackAction.SATISFIED if action is BulkAction.SATISFIED else FeedbackAction.ABANDON
    if wanted not in allowed_actions(task):
        return f"a {task.status.value.replace('_', ' ')} task cannot be {action.value}"
    return None


async def plan_bulk(
    review: ReviewService,
    task_ids: Sequence[str],
    action: BulkAction,
    *,
    reviewer: str,
    assignee: str | None = None,
    claims: Claims | None = None,
) -> BulkPlan:
    """Read the selection now and sort it into tasks to act on and tasks skipped (with reasons)."""
    if action is BulkAction.ASSIGN and not (assignee and assignee.strip()):
        raise EvidenceDeskError("assigning needs the reviewer's name")
    claims = claims or Claims(review.store)
    held = await claims.for_tasks(list(task_ids))
    plan = BulkPlan(action=action, ready=[], skipped=[], assignee=assignee.strip() if assignee else None)
    seen: set[str] = set()
    for task_id in task_ids:
        task = await review.store.get_task(task_id)
        if task.id in seen:
            continue
        seen.add(task.id)
        reason = _refusal(task, action, held.get(task.id), reviewer, plan.assignee)
        if reason is None:
            plan.ready.append(task)
        else:
            plan.skipped.append(BulkSkip(task.id, task.title, reason))
    return plan


async def _assign(claims: Claims, task: TaskRecord, assignee: str, by: str) -> None:
    now = claims.now()
    await claims.store.put_claim(task.id, assignee, now=now, expires_at=now + ASSIGN_LEASE, force=True)
    assert task.main_session_id is not None
    assignment = ClaimAssignment(reviewer=assignee, by=by, time=now, expires_at=now + ASSIGN_LEASE)
    await claims.store.append_events(task.main_session_id, [new_event(assignment)], task_id=task.id)


async def iter_bulk(
    review: ReviewService,
    plan: BulkPlan,
    *,
    note: str | None = None,
    reviewer: str,
    result: BulkResult | None = None,
    cancel: Cancellation | None = None,
    claims: Claims | None = None,
) -> AsyncIterator[BulkProgress]:
    """Act on each planned task in turn, yielding after each; stops before the next task once
    ``cancel`` is set. ``result`` (if given) is filled as it goes, so a caller that stops early
    still knows what was done."""
    result = result if result is not None else BulkResult(plan.action)
    result.total = len(plan.ready)
    result.skipped = list(plan.skipped)
    claims = claims or Claims(review.store)
    for task in plan.ready:
        if cancel is not None and cancel.cancelled:
            result.cancelled = True
            return
        failed: str | None = None
        try:
            holder = await claims.holder(task.id)  # someone may have claimed it since the plan
            if holder is not None and holder.reviewer not in (reviewer, plan.assignee):
                raise RefusedAction(holder.describe())
            if plan.action is BulkAction.ASSIGN:
                assert plan.assignee is not None
                await _assign(claims, task, plan.assignee, reviewer)
            else:
                action = (
                    FeedbackAction.SATISFIED
                    if plan.action is BulkAction.SATISFIED
                    else FeedbackAction.ABANDON
                )
                await review.feedback(task.id, action, expected_version=task.version, note=note)
        except (EvidenceDeskError, IllegalTransition) as exc:
            failed = str(exc)
            result.failed.append(BulkSkip(task.id, task.title, failed))
        else:
            result.done.append(task.id)
        yield BulkProgress(
            len(result.done) + len(result.failed), result.total, task.id, task.title, failed=failed
        )
    if cancel is not None and cancel.cancelled and len(result.done) + len(result.failed) < result.total:
        result.cancelled = True


async def run_bulk(
    review: ReviewService,
    plan: BulkPlan,
    *,
    reviewer: str,
    note: str | None = None,
    progress: Callable[[BulkProgress], None] | None = None,
    cancel: Cancellation | None = None,
    claims: Claims | None = None,
) -> BulkResult:
    """``iter_bulk`` to the end (or the cancellation), reporting each step to ``progress``."""
    result = BulkResult(plan.action)
    async for step in iter_bulk(
        review, plan, note=note, reviewer=reviewer, result=result, cancel=cancel, claims=claims
    ):
        if progress is not None:
            progress(step)
    return result


__all__ = [
    "ASSIGN_LEASE",
    "BulkAction",
    "BulkPlan",
    "BulkProgress",
    "BulkResult",
    "BulkSkip",
    "Cancellation",
    "iter_bulk",
    "plan_bulk",
    "run_bulk",
]
