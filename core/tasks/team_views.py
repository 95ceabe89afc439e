"""The read side of the team panes: batches with their progress, schedules with their next
run and last verdict, and the tasks each reviewer holds.

The desk asks these questions and only renders the answers: it never opens the store, composes
a query or parses a cron expression. Every answer is a small frozen model computed for one
``now`` (injected), so what the panes show is tested against a fixed clock, not the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from core.domain.cadence import cron_zone, next_run
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.store import Store
from core.store.batches import BatchRepository
from core.store.schedules import ScheduleRepository
from core.store.team_sql import batch_headers
from core.tasks.claims import Claims, utc_now


class BatchView(BaseModel):
    """One batch as its pane row shows it."""

    model_config = ConfigDict(frozen=True)

    batch_id: str
    name: str  # the file it came from, as given to ``evidence-desk batch``
    created_at: datetime
    rows: int  # rows in the file
    total: int  # tasks queued from it
    by_status: dict[TaskStatus, int]
    decided: int  # tasks an analyst or the pipeline has finished with (terminal)

    @property
    def progress(self) -> float:
        return self.decided / self.total if self.total else 0.0

    def status_summary(self) -> str:
        """ "3 needs_review · 2 closed" in the order statuses are declared."""
        return " · ".join(f"{self.by_status[s]} {s.value}" for s in TaskStatus if self.by_status.get(s))


class ScheduleView(BaseModel):
    """One schedule as its pane row shows it."""

    model_config = ConfigDict(frozen=True)

    schedule_id: str
    task_id: str
    title: str
    every: str  # "cron 0 9 * * *" or "every 300 s"
    next_run: datetime  # the next firing after ``now`` (the stored one when it is still ahead)
    due: bool  # the stored firing time has passed: the next desk or worker that looks fires it
    last_run: datetime | None
    last_verdict: str | None
    verify_heartbeat: bool
    enabled: bool  # False once the schedule's task is closed or abandoned: firing stops


class AssignedTask(BaseModel):
    """A task someone holds a claim on: one row of a reviewer's queue."""

    model_config = ConfigDict(frozen=True)

    task: TaskRecord
    reviewer: str
    expires_at: datetime


class TeamViews:
    """Batches, schedules and assignments over one workspace's store."""

    def __init__(
        self, store: Store, *, clock: Callable[[], datetime] = utc_now, cron_timezone: str | None = None
    ) -> None:
        self._store = store
        self._clock = clock
        self._zone = cron_zone(cron_timezone)

    def now(self) -> datetime:
        return self._clock().astimezone(UTC)

    async def batches(self) -> list[BatchView]:
        """Every batch, newest first, with its tasks counted by status."""
        found = await BatchRepository(self._store).progress()
        headers = await batch_headers(self._store)
        views = [
            BatchView(
                batch_id=p.batch_id,
                name=p.source,
                created_at=_aware(headers[p.batch_id][0]),
                rows=headers[p.batch_id][1],
                total=p.total,
                by_status=p.by_status,
                decided=sum(n for st, n in p.by_status.items() if st.is_terminal),
            )
            for p in found
            if p.batch_id in headers
        ]
        return sorted(views, key=lambda v: v.created_at, reverse=True)

    async def schedules(self) -> list[ScheduleView]:
        """Every schedule with its next firing after now and how its last firing ended."""
        now = self.now()
        views = []
        for sc in await ScheduleRepository(self._store).all():
            task = await self._store.get_task(sc.task_id)
            due = sc.next_run_at <= now
            views.append(
                ScheduleView(
                    schedule_id=sc.id,
                    task_id=sc.task_id,
                    title=task.title,
                    every=f"cron {sc.cron}" if sc.cron else f"every {sc.interval_s} s",
                    next_run=next_run(sc.cron, sc.interval_s, now, self._zone) if due else sc.next_run_at,
                    due=due,
                    last_run=sc.last_run_at,
                    last_verdict=sc.last_verdict or _latest_verdict(task),
                    verify_heartbeat=sc.verify_heartbeat,
                    enabled=not task.status.is_terminal,
                )
            )
        return views

    async def reviewers(self) -> list[str]:
        """Reviewers holding a claim now, for the "queue per reviewer" choice."""
        return sorted({c.reviewer for c in await Claims(self._store, clock=self._clock).assigned()})

    async def assigned(self, reviewer: str | None) -> list[AssignedTask]:
        """The tasks ``reviewer`` (or, with None, anyone) holds, oldest claim first."""
        claims = await Claims(self._store, clock=self._clock).assigned(reviewer)
        found = []
        for c in claims:
            found.append(
                AssignedTask(
                    task=await self._store.get_task(c.task_id), reviewer=c.reviewer, expires_at=c.expires_at
                )
            )
        return found


def _aware(when: datetime) -> datetime:
    """SQLite hands back naive UTC times; every time in these views is aware."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _latest_verdict(task: TaskRecord) -> str | None:
    """The verdict the task's latest attempt left on the task row (a schedule never fired: None)."""
    if task.attempt_count == 0:
        return None
    if task.latest_validation_status is None:
        return f"{task.status.value} (not validated)"
    category = task.latest_category
    return (
        f"{task.latest_validation_status}: {category}"
        if category and category != "none"
        else task.latest_validation_status
    )


__all__ = ["AssignedTask", "BatchView", "ScheduleView", "TeamViews"]
