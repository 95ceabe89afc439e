"""Scheduled and heartbeat tasks (seed 004): a task that recurs, each firing a new attempt.

A schedule owns one task. Each firing asks that task for another attempt in its own session, with
the checklist (seed 004's ``HEARTBEAT.md``) read afresh, so the transcript and evidence of every
heartbeat stay together and the validator sees what earlier firings found.

Validation of heartbeat answers follows seed 004: skipped unless ``verify_heartbeat`` is on (in
the settings or on the schedule), and then every answer is validated whatever the trigger
keywords, which is what catches a lazy ``HEARTBEAT_OK`` as ``goal_missed`` and retries it.

On PostgreSQL one procrastinate periodic task (every 5 s) defers a firing job per due schedule;
on SQLite the desk or ``worker`` fires them in-process. Either way the firing is claimed by a
compare-and-set on the schedule's next run time, so it happens once.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from core.config import ValidationMode
from core.domain import FeedbackAction, TaskStatus
from core.domain.cadence import check_cron, next_run
from core.errors import ConfigurationError, RefusedAction
from core.inputs import read_input_text
from core.store.schedules import ScheduleRecord, ScheduleRepository
from core.workspace import Workspace

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
    first = next_run(cron, interval_s, datetime.now(UTC))
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
    """One firing: claim it, ask the task for another attempt, run it, record the verdict."""
    from core.tasks.review import ReviewService
    from core.tasks.service import TaskService

    repo = ScheduleRepository(ws.store)
    schedule = await repo.get(schedule_id)
    if claim:
        upcoming = next_run(schedule.cron, schedule.interval_s, max(schedule.next_run_at, datetime.now(UTC)))
        if not await repo.claim(schedule.id, schedule.next_run_at, upcoming):
            return "fired elsewhere"
    hws = heartbeat_workspace(ws, schedule)
    service = TaskService(hws)
    task = await ws.store.get_task(schedule.task_id)
    if task.status.is_execution_active:
        verdict = "skipped: the previous firing is still running"
        await repo.record_verdict(schedule.id, verdict)
        return verdict
    if task.status.is_terminal:
        verdict = f"stopped: the task is {task.status.value}"
        await repo.record_verdict(schedule.id, verdict)
        return verdict
    if task.status in (TaskStatus.AWAITING_FEEDBACK, TaskStatus.NEEDS_REVIEW):
        instructions = "Run the heartbeat checklist again."
        prompt = await asyncio.to_thread(heartbeat_prompt, schedule.checklist, instructions)
        try:
            task = await ReviewService(service).feedback(
                task.id, FeedbackAction.REVISE, expected_version=task.version, prompt=prompt, note="heartbeat"
            )
        except RefusedAction as exc:  # an analyst acted at the same moment: their word stands
            return f"skipped: {exc}"
    task = await service.run(task.id)
    verdict = _verdict(task.status, task.latest_validation_status, task.latest_category)
    await repo.record_verdict(schedule.id, verdict)
    return verdict


def _verdict(status: TaskStatus, validation: str | None, category: str | None) -> str:
    if validation is None:
        return f"{status.value} (not validated)"
    if category and category != "none":
        return f"{validation}: {category}"
    return validation
