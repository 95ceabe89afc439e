"""Scheduled and heartbeat tasks (seed 004): a task that recurs, each firing a new attempt.

A schedule owns one task at a time. A firing runs it (its first run, or a revision queued for
it) in its own session, with the checklist (seed 004's ``HEARTBEAT.md``) stored in the workspace
when the schedule was added, so any worker on any machine fires it the same way. Once the
task's answer waits for the analyst (``awaiting_feedback``, ``needs_review``, ``failed``), no
firing touches it again (seed 002: schedulers never continue work that waits for review): the
next firing starts a new task of the schedule's series, which the schedule owns from then on,
and the waiting answer stays for review. A closed or abandoned task stops the schedule.

Validation of heartbeat answers follows seed 004: skipped unless ``verify_heartbeat`` is on (in
the settings or on the schedule), and then every answer is validated whatever the trigger
keywords, which is what catches a lazy ``HEARTBEAT_OK`` as ``goal_missed`` and retries it.

On PostgreSQL one procrastinate periodic task (every 5 s) defers a firing job per due schedule;
on SQLite the desk or ``worker`` fires them in-process. Either way the firing is claimed by a
compare-and-set on the schedule's next run time, so it happens once.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from core.config import ValidationMode
from core.domain import TaskStatus
from core.domain.cadence import check_cron, cron_zone, next_due, next_run
from core.domain.carried import carried_name
from core.domain.event_codec import decode_as
from core.domain.event_payloads import StatusChange
from core.domain.facts import EventKind
from core.domain.records import TaskRecord
from core.errors import ConfigurationError, EvidenceDeskError, RefusedAction
from core.store.reachability import is_connection_lost
from core.store.schedules import FiringStatus, ScheduleRecord, ScheduleRepository
from core.tasks.carried_files import carried_text, read_carried_source, store_carried
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.tasks.service import TaskService

log = logging.getLogger(__name__)

LAZY_REPLY = "HEARTBEAT_OK"


def heartbeat_prompt(checklist: tuple[str, str] | None, instructions: str) -> str:
    """What each firing asks: the standing instructions and the checklist (its name and text)."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = f"Heartbeat at {now}. {instructions.strip()}"
    if checklist:
        name, text = checklist
        body += f"\n\nThe checklist ({name}):\n{text.strip()}"
    body += (
        f"\n\nDo every item of the checklist that needs doing and report what you did. Reply "
        f"{LAZY_REPLY} only when you have checked every item and nothing needs attention."
    )
    return body


async def add_schedule(
    ws: Workspace,
    instructions: str,
    *,
    cron: str | None = None,
    interval_s: int | None = None,
    checklist: Path | None = None,
    verify_heartbeat: bool = False,
    title: str | None = None,
) -> ScheduleRecord:
    """Create the schedule's task and the schedule; everything is checked before anything is stored.

    The checklist travels with the schedule: its text is stored in the workspace (owned by the
    schedule's first task) when the schedule is added, and every firing, on whichever worker
    takes it, reads it from there. To change the checklist, add the schedule again.
    """
    from core.tasks.service import TaskService

    if (cron is None) == (interval_s is None):
        raise ConfigurationError("give a schedule either --cron or --every, not both or neither")
    if cron is not None:
        check_cron(cron)
    if interval_s is not None and interval_s < 1:
        raise ConfigurationError("--every must be at least 1 second")
    source = None
    if checklist is not None:  # refuses a missing or unreadable checklist now, in one line
        source = (
            carried_name(str(checklist)),
            await read_carried_source(checklist, what="heartbeat checklist"),
        )
    text = heartbeat_prompt(source, instructions)
    task = await TaskService(ws).create(text, title=title or f"Heartbeat: {instructions.strip()[:80]}")
    spec = None
    if checklist is not None and source is not None:
        spec = await store_carried(ws.store, source[1], checklist, owner=task.id)
    first = next_run(cron, interval_s, datetime.now(UTC), cron_zone(ws.settings.cron_timezone))
    return await ScheduleRepository(ws.store).add(
        task.id,
        cron=cron,
        interval_s=interval_s,
        checklist=spec,
        verify_heartbeat=verify_heartbeat,
        next_run_at=first,
    )


async def due_schedule_ids(store: object) -> list[str]:
    return await ScheduleRepository(store).due()  # type: ignore[arg-type]


def heartbeat_workspace(ws: Workspace, schedule: ScheduleRecord) -> Workspace:
    """The workspace as a heartbeat sees it: validation always (verify_heartbeat) or never (seed 004)."""
    verify = schedule.verify_heartbeat or ws.settings.verify_heartbeat
    settings = ws.settings.model_copy(
        update={
            "validation_mode": ValidationMode.ALWAYS if verify else ValidationMode.OFF,
            "defer_runs": False,  # the firing runs where it was claimed
            "reviewer": f"schedule {schedule.id[:8]}",
        }
    )
    return Workspace(
        settings=settings, store=ws.store, gateway=ws.gateway, tools=ws.tools, bus=ws.bus, corpus=ws.corpus
    )


@dataclass(frozen=True)
class Firing:
    """What one firing did: how it ended, the short verdict a list shows, and why in full."""

    status: FiringStatus | None  # None: another desk or worker fired it (nothing recorded here)
    verdict: str
    reason: str | None = None

    @property
    def failed(self) -> bool:
        return self.status is FiringStatus.FAILED


async def fire(ws: Workspace, schedule_id: str, *, claim: bool = True, now: datetime | None = None) -> Firing:
    """One firing: claim it, ask the task for another attempt (or start the series' next task), run
    it, record how it ended.

    The next firing is counted from this one's due time (``next_due``), never from ``now``. A
    firing that fails (an unreadable checklist, a task that ended ``failed``, any error) records
    its reason on the schedule; only a lost database (nothing can be recorded; the job is
    retried) and cancellation propagate.
    """
    repo = ScheduleRepository(ws.store)
    schedule = await repo.get(schedule_id)
    if claim:
        upcoming = next_due(
            schedule.cron,
            schedule.interval_s,
            schedule.next_run_at,
            now or datetime.now(UTC),
            cron_zone(ws.settings.cron_timezone),
        )
        if not await repo.claim(schedule.id, schedule.next_run_at, upcoming):
            return Firing(status=None, verdict="fired elsewhere")
    try:
        firing = await _fire_claimed(ws, repo, schedule)
    except Exception as exc:
        if is_connection_lost(exc):
            raise
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if not isinstance(exc, EvidenceDeskError):
            reason = f"{type(exc).__name__}: {reason}"
        log.warning("schedule %s: firing failed: %s", schedule.id[:12], reason)
        firing = Firing(status=FiringStatus.FAILED, verdict=f"failed: {reason}", reason=reason)
    await repo.record_verdict(
        schedule.id, firing.verdict, status=firing.status or FiringStatus.RAN, reason=firing.reason
    )
    return firing


async def _fire_claimed(ws: Workspace, repo: ScheduleRepository, schedule: ScheduleRecord) -> Firing:
    from core.tasks.service import TaskService

    service = TaskService(heartbeat_workspace(ws, schedule))
    task = await ws.store.get_task(schedule.task_id)
    if task.status.is_execution_active:
        return Firing(FiringStatus.SKIPPED, "skipped: the previous firing is still running")
    if task.status.is_terminal:
        return Firing(FiringStatus.STOPPED, f"stopped: the task is {task.status.value}")
    note = ""
    if task.status.requires_user_action:
        # Seed 002: a scheduler never continues work that waits for the analyst (awaiting_feedback,
        # needs_review, failed). That answer stays as it is, for review; this firing is the next
        # task of the schedule's series, and the schedule follows it from now on.
        waiting = task
        task = await _next_in_series(ws, service, schedule, waiting)
        note = f" (new task; {waiting.id[:8]} {waiting.status.value})"
    try:
        task = await service.run(task.id)
    except RefusedAction as exc:  # an analyst or another runner acted at the same moment: theirs stands
        return Firing(FiringStatus.SKIPPED, f"skipped: {exc}", str(exc))
    verdict = _verdict(task.status, task.latest_validation_status, task.latest_category) + note
    if task.status is TaskStatus.FAILED:
        reason = await _failure_reason(ws, task.id)
        return Firing(FiringStatus.FAILED, verdict, f"task {task.id[:8]} failed: {reason}")
    return Firing(FiringStatus.RAN, verdict)


async def _failure_reason(ws: Workspace, task_id: str) -> str:
    """Why the task ended failed: the reason its last status change recorded."""
    events = await ws.store.get_task_events(task_id, kinds=[EventKind.TASK_STATUS_CHANGED])
    reason = decode_as(events[-1], StatusChange).reason if events else None
    return reason or "no reason recorded"


async def _next_in_series(
    ws: Workspace, service: TaskService, schedule: ScheduleRecord, waiting: TaskRecord
) -> TaskRecord:
    """A new task for this firing, with the schedule's checklist, that the schedule now owns.

    The series is written on the new task (``task_metadata``: the schedule and the task before
    it), so every task of a schedule can be found and ordered; the one waiting keeps its answer.
    The checklist comes from the workspace (an older schedule's path: from this machine's disk).
    """
    instructions = standing_instructions(waiting.text)
    checklist = None
    if schedule.checklist:
        text, name = await carried_text(ws.store, schedule.checklist, what="heartbeat checklist")
        checklist = (name, text)
    task = await service.create(heartbeat_prompt(checklist, instructions), title=waiting.title)
    series = {"schedule_id": schedule.id, "follows_task": waiting.id, "follows_status": waiting.status.value}
    return await ScheduleRepository(ws.store).continue_series(schedule.id, waiting.id, task.id, series)


def standing_instructions(text: str) -> str:
    """The schedule's own instructions, read back from a firing's text (``heartbeat_prompt`` wrote it)."""
    found = _INSTRUCTIONS.match(text)
    return found.group(1).strip() if found and found.group(1).strip() else "Run the heartbeat checklist."


_INSTRUCTIONS = re.compile(
    r"Heartbeat at [^.]*?UTC\. (.*?)(?:\n\nThe checklist \(|\n\nDo every item )", re.DOTALL
)


def _verdict(status: TaskStatus, validation: str | None, category: str | None) -> str:
    if validation is None:
        return f"{status.value} (not validated)"
    if category and category != "none":
        return f"{validation}: {category}"
    return validation
