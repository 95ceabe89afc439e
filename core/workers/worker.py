"""``evidence-desk worker``: run the workspace's queued tasks until stopped.

On PostgreSQL each task is a procrastinate job (see ``dispatch``); any number of workers on any
number of machines share the queue, and a worker that dies mid-task (SIGKILL, power loss) stops
sending heartbeats, so a surviving worker retries its job and resumes the task (``resume``). On
SQLite the same command runs the open tasks in this process, at most ``concurrency`` at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from core.domain.event_codec import decode_as
from core.domain.event_payloads import StatusChange
from core.domain.facts import EventKind, RevisionRequester
from core.domain.status import TaskStatus
from core.errors import RefusedAction
from core.store.schedules import ScheduleRepository
from core.tasks import dispatch
from core.tasks.policy import is_writable
from core.tasks.recovery import runner_gone, runner_id
from core.tasks.state_machine import Trigger, can
from core.workers.resume import resume_interrupted
from core.workspace import Workspace

if TYPE_CHECKING:
    from procrastinate import App, JobContext

log = logging.getLogger(__name__)


@dataclass
class WorkerOptions:
    concurrency: int = 1
    once: bool = False  # stop when the queue is empty (tests, cron-driven batch runs)
    heartbeat_s: float = 10.0  # procrastinate worker heartbeat
    stalled_after_s: float = 30.0  # a worker silent this long is dead; its jobs are retried
    poll_s: float = 2.0  # how often an idle worker looks for work it was not notified of
    name: str | None = None


@dataclass
class WorkerStats:
    started: float = field(default_factory=time.monotonic)
    finished: Counter[str] = field(default_factory=Counter)
    resumed: int = 0
    skipped: int = 0
    errors: int = 0
    # (task id, outcome, reason) of every task that ended failed or whose run raised: what the
    # person who started the worker must look at, without reading its log
    failures: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return sum(self.finished.values())

    def failed(self, task_id: str, outcome: str, reason: str) -> None:
        self.failures.append((task_id, outcome, reason))

    def summary(self) -> str:
        elapsed = time.monotonic() - self.started
        parts = ", ".join(f"{n} {status}" for status, n in sorted(self.finished.items())) or "none"
        lines = [
            f"worker stopped after {elapsed:.1f}s: {self.runs} task(s) run ({parts}); "
            f"{self.resumed} resumed from a dead worker, {self.skipped} skipped, {self.errors} error(s)"
        ]
        for task_id, outcome, reason in self.failures[:SHOWN_FAILURES]:
            lines.append(f"  {task_id[:12]}  {outcome}: {reason}")
        if len(self.failures) > SHOWN_FAILURES:
            lines.append(
                f"  ... and {len(self.failures) - SHOWN_FAILURES} more (evidence-desk list --status failed)"
            )
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "finished": dict(self.finished),
            "resumed": self.resumed,
            "skipped": self.skipped,
            "errors": self.errors,
            "failures": [{"task_id": t, "outcome": o, "reason": r} for t, o, r in self.failures],
        }


SHOWN_FAILURES = 20


async def failure_reason(ws: Workspace, task_id: str) -> str:
    """Why the task ended failed: the reason its last status change recorded."""
    events = await ws.store.get_task_events(task_id, kinds=[EventKind.TASK_STATUS_CHANGED])
    return (
        (decode_as(events[-1], StatusChange).reason or "no reason recorded")
        if events
        else "no reason recorded"
    )


class Progress:
    """A progress bar on a terminal, one line per finished task otherwise (logs, CI)."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self._bar: Any = None
        if not quiet and self.stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=None, unit="task", file=self.stream, desc="worker")

    def done(self, task_id: str, status: str) -> None:
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(f"{task_id[:8]} {status}")
        else:
            print(f"{task_id[:12]}  {status}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


async def run_one(
    ws: Workspace, task_id: str, *, retried: bool, stats: WorkerStats, progress: Progress
) -> str:
    """The job body: resume a dead worker's task if need be, then run it to a resting status."""
    from core.tasks.service import RunAbandoned, TaskService

    task = await ws.store.get_task(task_id)
    if task.status.is_execution_active:
        if not (retried or runner_gone(task)):
            stats.skipped += 1
            return "running elsewhere"
        resumed = await resume_interrupted(ws, task, why="its worker stopped mid-task; the job was retried")
        if resumed is None:
            stats.skipped += 1
            return "moved by someone else"
        stats.resumed += 1
        task = resumed
    if not is_writable(task) or not can(task.status, Trigger.START):
        stats.skipped += 1
        return f"nothing to run ({task.status.value})"
    try:
        final = await TaskService(ws).run(task_id)
    except RunAbandoned:
        stats.finished[TaskStatus.ABANDONED.value] += 1
        progress.done(task_id, TaskStatus.ABANDONED.value)
        return TaskStatus.ABANDONED.value
    except RefusedAction as exc:  # another worker started it first (version check)
        stats.skipped += 1
        return f"refused: {exc}"
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the service already moved the task and kept the evidence
        stats.errors += 1
        stats.failed(task_id, "error", f"{type(exc).__name__}: {exc}")
        log.warning("task %s: %s: %s", task_id[:12], type(exc).__name__, exc)
        return "error"
    if final.status is TaskStatus.FAILED:
        stats.failed(task_id, final.status.value, await failure_reason(ws, task_id))
    stats.finished[final.status.value] += 1
    progress.done(task_id, final.status.value)
    return final.status.value


def _queued(task_status: TaskStatus, requested_by: RevisionRequester | None) -> bool:
    """Waiting for a runner: new, or an automatic retry (an analyst's revise is deferred when asked)."""
    return task_status is TaskStatus.OPEN or (
        task_status is TaskStatus.NEEDS_REVISION and requested_by is not RevisionRequester.ANALYST
    )


async def queued_task_ids(ws: Workspace) -> list[str]:
    """Tasks waiting for a runner, and tasks whose runner died (they are resumed, not delivered)."""
    waiting = [TaskStatus.OPEN, TaskStatus.NEEDS_REVISION]
    active = [s for s in TaskStatus if s.is_execution_active]
    tasks = await ws.store.list_tasks(statuses=[*waiting, *active])
    scheduled = await ScheduleRepository(ws.store).owned_task_ids()  # only their firings start them
    return [
        t.id
        for t in tasks
        if is_writable(t)
        and (
            (_queued(t.status, t.revision_requested_by) and t.id not in scheduled)
            or (t.status.is_execution_active and runner_gone(t))
        )
    ]


async def run_worker(ws: Workspace, options: WorkerOptions, progress: Progress) -> WorkerStats:
    """Run until stopped (SIGINT/SIGTERM) or, with ``once``, until nothing is left to run."""
    ws = worker_workspace(ws)
    await asyncio.to_thread(Workspace.warm_up_models)  # litellm's import, paid before the first job
    stats = WorkerStats()
    try:
        if ws.store.is_sqlite:
            await _run_local(ws, options, stats, progress)
        else:
            await _run_procrastinate(ws, options, stats, progress)
    finally:
        progress.close()
    return stats


def worker_workspace(ws: Workspace) -> Workspace:
    """The same workspace with ``defer_runs`` off: a worker runs what it is given, never re-defers it."""
    if ws.settings.defer_runs is False:
        return ws
    settings = ws.settings.model_copy(update={"defer_runs": False})
    return Workspace(
        settings=settings, store=ws.store, gateway=ws.gateway, tools=ws.tools, bus=ws.bus, corpus=ws.corpus
    )


# ---------------------------------------------------------------------- PostgreSQL
def register_jobs(app: App) -> None:
    """The job bodies; each finds its workspace and counters in the worker's additional context."""

    @app.task(name=dispatch.RUN_TASK, queue=dispatch.QUEUE, pass_context=True)
    async def run_task(context: JobContext, task_id: str) -> str:
        extra = context.additional_context
        retried = bool(context.job.attempts)  # procrastinate counts earlier tries of this job
        return await run_one(
            extra["ws"], task_id, retried=retried, stats=extra["stats"], progress=extra["progress"]
        )

    @app.task(name=dispatch.FIRE_SCHEDULE, queue=dispatch.QUEUE, pass_context=True)
    async def fire_schedule(context: JobContext, schedule_id: str) -> str:
        from core.workers.schedules import fire

        extra = context.additional_context
        verdict = await fire(extra["ws"], schedule_id)
        extra["progress"].done(schedule_id, f"heartbeat {verdict}")
        return verdict

    @app.periodic(cron="* * * * * */5", periodic_id="schedules")
    @app.task(
        name="evidence_desk.schedule_tick", queue=dispatch.QUEUE, pass_context=True, queueing_lock="tick"
    )
    async def schedule_tick(context: JobContext, timestamp: int) -> int:
        from core.workers.schedules import due_schedule_ids

        ids = await due_schedule_ids(context.additional_context["ws"].store)
        for schedule_id in ids:
            with contextlib.suppress(Exception):  # already queued: AlreadyEnqueued
                await context.app.configure_task(
                    dispatch.FIRE_SCHEDULE, queue=dispatch.QUEUE, lock=schedule_id, queueing_lock=schedule_id
                ).defer_async(schedule_id=schedule_id)
        return len(ids)


async def _run_procrastinate(
    ws: Workspace, options: WorkerOptions, stats: WorkerStats, progress: Progress
) -> None:
    await dispatch.ensure_queue_schema(ws.store)
    await dispatch.defer_tasks(ws.store, await queued_task_ids(ws))  # queued before any worker ran
    app = dispatch.make_app(ws.store.url, min_size=1, max_size=options.concurrency + 4)
    register_jobs(app)
    async with app.open_async():
        rescue = asyncio.create_task(_rescue_stalled(app, options), name="rescue-stalled-jobs")
        try:
            await app.run_worker_async(
                queues=[dispatch.QUEUE],
                name=options.name or f"evidence-desk {runner_id()}",
                concurrency=options.concurrency,
                wait=not options.once,
                additional_context={"ws": ws, "stats": stats, "progress": progress},
                update_heartbeat_interval=options.heartbeat_s,
                stalled_worker_timeout=options.stalled_after_s,
                fetch_job_polling_interval=options.poll_s,
                abort_job_polling_interval=options.poll_s,
                delete_jobs="successful",
            )
        finally:
            rescue.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await rescue


async def _rescue_stalled(app: App, options: WorkerOptions) -> None:
    """procrastinate's stalled-job recovery: jobs of workers silent too long go back to the queue.

    When the task already has a queued job (a worker's start-up sweep found the dead runner
    first), that job resumes it, and the stalled one is closed as failed: a task is queued once.
    """
    from procrastinate import exceptions
    from procrastinate.jobs import Status

    while True:
        try:
            for job in await app.job_manager.get_stalled_jobs(
                seconds_since_heartbeat=options.stalled_after_s
            ):
                assert job.id is not None
                try:
                    await app.job_manager.retry_job(job)
                    log.warning("job %s of a stalled worker is retried", job.id)
                except exceptions.UniqueViolation:
                    await app.job_manager.finish_job_by_id_async(
                        job.id, status=Status.FAILED, delete_job=False
                    )
        except Exception as exc:  # the next round tries again; a worker must not die of a missed poll
            log.warning("could not look for stalled jobs: %s", exc)
        await asyncio.sleep(options.heartbeat_s)


# ---------------------------------------------------------------------- SQLite
async def _run_local(ws: Workspace, options: WorkerOptions, stats: WorkerStats, progress: Progress) -> None:
    from core.workers.schedules import due_schedule_ids, fire

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    slots = asyncio.Semaphore(options.concurrency)
    running: dict[str, asyncio.Task[Any]] = {}

    async def job(key: str, body: Any) -> None:
        async with slots:
            await body

    stopping = asyncio.ensure_future(stop.wait())
    try:
        while not stop.is_set():
            for schedule_id in await due_schedule_ids(ws.store):
                if schedule_id not in running:
                    running[schedule_id] = asyncio.create_task(job(schedule_id, fire(ws, schedule_id)))
            for task_id in await queued_task_ids(ws):
                if task_id not in running:
                    body = run_one(ws, task_id, retried=False, stats=stats, progress=progress)
                    running[task_id] = asyncio.create_task(job(task_id, body))
            if not running and options.once:
                break
            waiters: set[asyncio.Future[Any]] = {*running.values(), stopping}
            await asyncio.wait(waiters, timeout=options.poll_s, return_when=asyncio.FIRST_COMPLETED)
            for key, handle in list(running.items()):
                if handle.done():
                    del running[key]
                    if not handle.cancelled() and (exc := handle.exception()) is not None:
                        stats.errors += 1
                        stats.failed(key, "error", f"{type(exc).__name__}: {exc}")
                        log.warning("%s: %s", key[:12], exc)
    finally:
        stopping.cancel()
        for handle in running.values():
            handle.cancel()
        await asyncio.gather(*running.values(), return_exceptions=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
