"""Scheduled and heartbeat tasks (seed 004): a task that recurs, each firing a new attempt.

A schedule owns one task at a time. A firing runs it (its first run, or a revision queued for
it) with the checklist (seed 004's ``HEARTBEAT.md``) read afresh, in its own session. Once the
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

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from core.config import ValidationMode
from core.domain import TaskStatus
from core.domain.cadence import check_cron, cron_zone, next_run
from core.domain.records import TaskRecord
from core.errors import ConfigurationError, RefusedAction
from core.inputs import read_input_text
from core.store.schedules import ScheduleRecord, ScheduleRepository
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.tasks.service import TaskService

LAZY_REPLY = "HEARTBEAT_OK"


def heartbeat_prompt(checklist: str | None, instructions: str) -> str:
    """What each firing asks: the standing instructions and the checklist as it reads now."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = f"Heartbeat at {now}. {instructions.strip()}"
    if checklist:
        text = read_input_text(Path(checklist), what="heartbeat checklist")
        body += f"\n\nThe checklist ({Path(checklist).name}):\n{text.strip()}"
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
    """Create the schedule's task and the schedule; everything is checked before anything is stored."""
    from core.tasks.service import TaskService

    if (cron is None) == (interval_s is None):
        raise ConfigurationError("give a schedule either --cron or --every, not both or neither")
    if cron is not None:
        check_cron(cron)
    if interval_s is not None and interval_s < 1:
        raise ConfigurationError("--every must be at least 1 second")
    path = await asyncio.to_thread(lambda: str(checklist.resolve())) if checklist is not None else None
    text = await asyncio.to_thread(
        heartbeat_prompt, path, instructions
    )  # refuses an unreadable checklist now
    task = await TaskService(ws).create(text, title=title or f"Heartbeat: {instructions.strip()[:80]}")
    first = next_run(cron, interval_s, datetime.now(UTC), cron_zone(ws.settings.cron_timezone))
    return await ScheduleRepository(ws.store).add(
        task.id,
        cron=cron,
        interval_s=interval_s,
        checklist=path,
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


async def fire(ws: Workspace, schedule_id: str, *, claim: bool = True) -> str:
    """One firing: claim it, ask the task for another attempt (or start the series' next task), run
    it, record the verdict."""
    from core.tasks.service import TaskService

    repo = ScheduleRepository(ws.store)
    schedule = await repo.get(schedule_id)
    if claim:
        after = max(schedule.next_run_at, datetime.now(UTC))
        upcoming = next_run(schedule.cron, schedule.interval_s, after, cron_zone(ws.settings.cron_timezone))
        if not await repo.claim(schedule.id, schedule.next_run_at, upcoming):
            return "fired elsewhere"
    service = TaskService(heartbeat_workspace(ws, schedule))
    task = await ws.store.get_task(schedule.task_id)
    if task.status.is_execution_active:
        verdict = "skipped: the previous firing is still running"
        await repo.record_verdict(schedule.id, verdict)
        return verdict
    if task.status.is_terminal:
        verdict = f"stopped: the task is {task.status.value}"
        await repo.record_verdict(schedule.id, verdict)
        return verdict
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
        verdict = f"skipped: {exc}"
        await repo.record_verdict(schedule.id, verdict)
        return verdict
    verdict = _verdict(task.status, task.latest_validation_status, task.latest_category) + note
    await repo.record_verdict(schedule.id, verdict)
    return verdict


async def _next_in_series(
    ws: Workspace, service: TaskService, schedule: ScheduleRecord, waiting: TaskRecord
) -> TaskRecord:
    """A new task for this firing, with the checklist read afresh, that the schedule now owns.

    The series is written on the new task (``task_metadata``: the schedule and the task before
    it), so every task of a schedule can be found and ordered; the one waiting keeps its answer.
    """
    instructions = standing_instructions(waiting.text)
    text = await asyncio.to_thread(heartbeat_prompt, schedule.checklist, instructions)
    task = await service.create(text, title=waiting.title)
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
