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
import socket
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any, TextIO

from core.domain.event_codec import decode_as
from core.domain.event_payloads import StatusChange
from core.domain.facts import EventKind, RevisionRequester
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.errors import DatabaseUnreachable, RefusedAction
from core.store.engine import db_message
from core.store.reachability import is_connection_lost
from core.tasks import dispatch
from core.tasks.policy import is_writable
from core.tasks.recovery import runner_gone, runner_id
from core.tasks.state_machine import Trigger, can
from core.workers.reconnect import Link
from core.workers.resume import resume_interrupted
from core.workspace import Workspace

if TYPE_CHECKING:
    from procrastinate import App, JobContext
    from procrastinate.jobs import Job

log = logging.getLogger(__name__)


@dataclass
class WorkerOptions:
    concurrency: int = 1
    once: bool = False  # stop when the queue is empty (tests, cron-driven batch runs)
    heartbeat_s: float = 10.0  # procrastinate worker heartbeat
    stalled_after_s: float = 30.0  # a worker silent this long is dead; its jobs are retried
    poll_s: float = 2.0  # how often an idle worker looks for work it was not notified of
    name: str | None = None
    give_up_after_s: float | None = None  # an outage longer than this exits non-zero; None: wait forever


@dataclass
class WorkerStats:
    started: float = field(default_factory=time.monotonic)
    finished: Counter[str] = field(default_factory=Counter)
    resumed: int = 0
    skipped: int = 0
    errors: int = 0
    reconnects: int = 0  # database outages and restarts waited out
    firings: int = 0  # schedule firings this worker ran (fired elsewhere: not counted)
    failed_firings: int = 0  # of which ended failed; each is also a failure (``failed``) with its reason
    running: set[str] = field(default_factory=set)  # tasks this process is running now
    cut_off: set[str] = field(default_factory=set)  # tasks whose run here the lost database ended
    # job id -> (task id, the job's attempts) of run jobs the lost database cut off: procrastinate
    # writes their retry once the body ends, and that write can itself meet the lost database
    unrecorded: dict[int, tuple[str, int]] = field(default_factory=dict)
    # (task id, outcome, reason) of the latest tasks that ended failed or whose run raised: what the
    # person who started the worker must look at, without reading its log. Only the latest
    # ``FAILURES_KEPT`` are held (a worker runs for weeks); ``failure_count`` counts them all.
    failures: deque[tuple[str, str, str]] = field(default_factory=lambda: deque(maxlen=FAILURES_KEPT))
    failure_count: int = 0

    @property
    def runs(self) -> int:
        return sum(self.finished.values())

    def failed(self, task_id: str, outcome: str, reason: str) -> None:
        self.failures.append((task_id, outcome, reason))
        self.failure_count += 1

    def summary(self) -> str:
        elapsed = time.monotonic() - self.started
        parts = ", ".join(f"{n} {status}" for status, n in sorted(self.finished.items())) or "none"
        lines = [
            f"worker stopped after {elapsed:.1f}s: {self.runs} task(s) run ({parts}); "
            f"{self.resumed} resumed from a dead worker, {self.skipped} skipped, {self.errors} error(s)"
            + (f"; {self.firings} heartbeat firing(s), {self.failed_firings} failed" if self.firings else "")
            + (f"; {self.reconnects} database outage(s) waited out" if self.reconnects else "")
        ]
        shown = list(islice(reversed(self.failures), SHOWN_FAILURES))[::-1]  # the latest, in order
        for task_id, outcome, reason in shown:
            lines.append(f"  {task_id[:12]}  {outcome}: {reason}")
        if self.failure_count > len(shown):
            lines.append(
                f"  ... and {self.failure_count - len(shown)} more before these "
                "(evidence-desk list --status failed)"
            )
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "finished": dict(self.finished),
            "resumed": self.resumed,
            "skipped": self.skipped,
            "errors": self.errors,
            "reconnects": self.reconnects,
            "firings": self.firings,
            "failed_firings": self.failed_firings,
            "failures": [{"task_id": t, "outcome": o, "reason": r} for t, o, r in self.failures],
            "failure_count": self.failure_count,  # all of them; ``failures`` holds the latest
        }


SHOWN_FAILURES = 20
FAILURES_KEPT = 1000  # the latest failures a worker holds for its summary; older ones are counted
# psycopg's pool waits this long for a connection (its default, 30 s, held a worker that lost the
# database for a minute: one wait to record the cut-off job, one to unregister, before it said so)
POOL_WAIT_S = 3.0
LOST_DATABASE_RETRIES = 100  # per job; a job is cut off once per outage it lives through


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

            from core.terminal import raw_stream

            self._bar = tqdm(total=None, unit="task", file=raw_stream(self.stream), desc="worker")

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
        if still_owned(task, stats):
            stats.skipped += 1
            return "running elsewhere"
        why = "its worker stopped mid-task; the job was retried" if retried else "its runner stopped mid-task"
        resumed = await resume_interrupted(ws, task, why=why)
        if resumed is None:
            stats.skipped += 1
            return "moved by someone else"
        stats.resumed += 1
        task = resumed
    if not is_writable(task) or not can(task.status, Trigger.START):
        stats.skipped += 1
        return f"nothing to run ({task.status.value})"
    stats.running.add(task_id)
    try:
        final = await TaskService(await _runner_workspace(ws, task_id)).run(task_id)
    except DatabaseUnreachable:
        stats.cut_off.add(task_id)  # resumed by this process once the database is back
        raise
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
    finally:
        stats.running.discard(task_id)
    if final.status is TaskStatus.FAILED:
        stats.failed(task_id, final.status.value, await failure_reason(ws, task_id))
    stats.finished[final.status.value] += 1
    progress.done(task_id, final.status.value)
    return final.status.value


async def _runner_workspace(ws: Workspace, task_id: str) -> Workspace:
    """A schedule's task runs with its schedule's validation settings, however it reached the queue
    (a dead firing's runner resumed, an analyst's revise deferred), never with the plain ones."""
    from core.store.schedules import ScheduleRepository
    from core.workers.schedules import heartbeat_workspace

    schedule = await ScheduleRepository(ws.store).owner_of(task_id)
    return ws if schedule is None else heartbeat_workspace(ws, schedule)


async def fire_counted(ws: Workspace, schedule_id: str, *, stats: WorkerStats, progress: Progress) -> str:
    """The firing job's body: fire the schedule, count the firing, list a failure with its reason."""
    from core.workers.schedules import fire

    firing = await fire(ws, schedule_id)
    if firing.status is not None:  # fired here, not elsewhere
        stats.firings += 1
        if firing.failed:
            stats.failed_firings += 1
            stats.failed(schedule_id, "firing failed", firing.reason or firing.verdict)
    progress.done(schedule_id, f"heartbeat {firing.verdict}")
    return firing.verdict


OWNER_FRESH_S = (
    60.0  # two task heartbeats (core.tasks.service.HEARTBEAT_S): a runner elsewhere this fresh runs it
)


def still_owned(task: TaskRecord, stats: WorkerStats) -> bool:
    """The task's runner is still running it, so a second job for it must not resume it.

    A job can be retried while its first body still runs: procrastinate's stalled-job recovery
    judges a worker by its heartbeat, which pauses while a worker that lost the database winds
    down. Resuming then would put two runners on one task. This process knows its own runs; a
    live process on this host, or a fresh task heartbeat from another host, is trusted to be
    running it (and to resume it itself if it was cut off).
    """
    runner = task.runner
    if not runner:
        return False
    if runner == runner_id():
        return task.id in stats.running
    if runner_gone(task):
        return False
    if runner.rpartition(":")[0] == socket.gethostname():
        return True  # alive on this host
    beat = task.heartbeat_at or task.updated_at
    return datetime.now(UTC) - beat < timedelta(seconds=OWNER_FRESH_S)


async def release_cut_off(ws: Workspace, stats: WorkerStats) -> None:
    """Tasks this process was running when the database went away: resume and queue them again.

    Only this process can tell that its runner of a task is no longer running it; until it says
    so (here, once the database answers), other workers leave the task alone (``still_owned``).
    """
    ids = [t for t in stats.cut_off if t not in stats.running]
    again: list[str] = []
    for task_id in ids:
        task = await ws.store.get_task(task_id)
        if task.status.is_execution_active and task.runner == runner_id():
            why = "the database went away mid-run; resumed once it was back"
            if await resume_interrupted(ws, task, why=why) is not None:
                stats.resumed += 1
                again.append(task_id)
        stats.cut_off.discard(task_id)
    if again:
        await dispatch.defer_tasks(ws.store, again)


def _queued(task_status: TaskStatus, requested_by: RevisionRequester | None) -> bool:
    """Waiting for a runner: new, or an automatic retry (an analyst's revise is deferred when asked)."""
    return task_status is TaskStatus.OPEN or (
        task_status is TaskStatus.NEEDS_REVISION and requested_by is not RevisionRequester.ANALYST
    )


async def queued_task_ids(ws: Workspace) -> list[str]:
    """Tasks waiting for a runner, and tasks whose runner died (they are resumed, not delivered)."""
    from core.store.schedules import ScheduleRepository

    waiting = [TaskStatus.OPEN, TaskStatus.NEEDS_REVISION]
    active = [s for s in TaskStatus if s.is_execution_active]
    tasks = await ws.store.list_tasks(statuses=[*waiting, *active])
    # A schedule's task runs only when the schedule fires (when due, with its own validation
    # settings); as a plain queued task it ran at the first worker's start, before its due time.
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

    from procrastinate import RetryStrategy

    # A job cut off by a lost database is retried (and resumes its task); any other error is final.
    lost = RetryStrategy(max_attempts=LOST_DATABASE_RETRIES, retry_exceptions={DatabaseUnreachable})

    @app.task(name=dispatch.RUN_TASK, queue=dispatch.QUEUE, pass_context=True, retry=lost)
    async def run_task(context: JobContext, task_id: str) -> str:
        extra = context.additional_context
        retried = bool(context.job.attempts)  # procrastinate counts earlier tries of this job
        try:
            return await run_one(
                extra["ws"], task_id, retried=retried, stats=extra["stats"], progress=extra["progress"]
            )
        except DatabaseUnreachable:
            if context.job.id is not None:
                extra["stats"].unrecorded[context.job.id] = (task_id, context.job.attempts)
            raise

    @app.task(name=dispatch.FIRE_SCHEDULE, queue=dispatch.QUEUE, pass_context=True, retry=lost)
    async def fire_schedule(context: JobContext, schedule_id: str) -> str:
        extra = context.additional_context
        return await fire_counted(extra["ws"], schedule_id, stats=extra["stats"], progress=extra["progress"])

    @app.task(name=dispatch.SHADOW_VERDICT, queue=dispatch.QUEUE, pass_context=True, retry=lost)
    async def shadow_verdict(
        context: JobContext,
        candidate: str,
        validator_version: str,
        task_id: str,
        attempt_id: str,
        attempt_index: int,
    ) -> str:
        from core.judge.replay_queue import run_shadow_job

        extra = context.additional_context
        status = await run_shadow_job(
            extra["ws"], extra["replayers"], candidate, validator_version, task_id, attempt_id, attempt_index
        )
        extra["progress"].done(task_id, f"shadow verdict of {candidate}: {status}")
        return status

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
    """Serve rounds of procrastinate's worker until a requested stop, reconnecting in between.

    A round ends on a stop (SIGINT/SIGTERM: return), on ``once`` with nothing queued (return), or
    because the database went away: procrastinate raises, or stops itself when a side task (its
    heartbeat, its LISTEN) loses its connection. Then ``Link.until_up`` waits for the server and
    the next round starts; nothing but a requested stop or ``once`` ends the loop normally.
    """
    stop = asyncio.Event()
    link = Link(ws.store.engine, give_up_after_s=options.give_up_after_s)
    own_workers: list[int] = []  # this process's earlier procrastinate registrations
    with _stop_on_signals(stop), _quiet_procrastinate():
        while True:
            cause: BaseException | None = None
            try:
                if await _serve_round(ws, options, stats, progress, stop, own_workers):
                    return
            except Exception as exc:
                if not is_connection_lost(exc):
                    raise
                cause = exc
            if stop.is_set():
                return
            if not await link.until_up(stop, cause):
                return
            stats.reconnects += 1


async def _serve_round(
    ws: Workspace,
    options: WorkerOptions,
    stats: WorkerStats,
    progress: Progress,
    stop: asyncio.Event,
    own_workers: list[int],
) -> bool:
    """One procrastinate worker on a fresh pool; True when the worker is done (stop, or ``once``)."""
    from procrastinate.worker import Worker

    await dispatch.ensure_queue_schema(ws.store)
    await release_cut_off(ws, stats)
    await dispatch.defer_tasks(ws.store, await queued_task_ids(ws))  # queued before any worker ran
    app = dispatch.make_app(ws.store.url, min_size=1, max_size=options.concurrency + 4, timeout=POOL_WAIT_S)
    register_jobs(app)
    async with app.open_async():
        await _release_own_jobs(app, own_workers)
        worker = Worker(
            app=app,
            queues=[dispatch.QUEUE],
            name=options.name or f"evidence-desk {runner_id()}",
            concurrency=options.concurrency,
            wait=not options.once,
            # replayers: each candidate version's validator, built by its first shadow job, kept
            additional_context={"ws": ws, "stats": stats, "progress": progress, "replayers": {}},
            update_heartbeat_interval=options.heartbeat_s,
            stalled_worker_timeout=options.stalled_after_s,
            fetch_job_polling_interval=options.poll_s,
            abort_job_polling_interval=options.poll_s,
            delete_jobs="successful",
            install_signal_handlers=False,  # ours tell a requested stop from a lost connection
        )
        rescue = asyncio.create_task(_rescue_stalled(app, options, ws, stats), name="rescue-stalled-jobs")
        running = asyncio.create_task(worker.run(), name="procrastinate-worker")  # type: ignore[no-untyped-call]
        stopping = asyncio.create_task(stop.wait(), name="stop-requested")
        try:
            await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set() and not running.done():
                worker.stop()  # type: ignore[no-untyped-call]  # graceful: running jobs finish, then the worker unregisters
            await running
        finally:
            for side in (rescue, stopping):
                side.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await side
            if worker.worker_id is not None:  # it could not unregister: its jobs are ours to retry
                own_workers.append(worker.worker_id)
        if stop.is_set():
            return True
        # `once`: done when nothing is queued; a worker that stopped on a lost side task is not
        return options.once and not await app.job_manager.list_jobs_async(queue=dispatch.QUEUE, status="todo")


async def _release_own_jobs(app: App, own_workers: list[int]) -> None:
    """Jobs this process was running when it lost the database go back to the queue at once.

    Their bodies have ended (a round waits for its jobs), so nobody runs them; waiting for
    procrastinate's stalled-job recovery would leave them idle for ``stalled_after`` seconds.
    """
    while own_workers:
        worker_id = own_workers[0]
        for job in await app.job_manager.list_jobs_async(status="doing", worker_id=worker_id):
            await _requeue(app, job, "job %s, cut off by the lost connection, is retried")
        await app.job_manager.unregister_worker(worker_id)
        own_workers.pop(0)


@contextlib.contextmanager
def _stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop``: the only way a worker ends with exit status 0 while it waits."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        yield
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


@contextlib.contextmanager
def _quiet_procrastinate() -> Iterator[None]:
    """procrastinate and psycopg's pool log a traceback per failed side task and connection try;
    the worker's own lines ("database unreachable", "reconnected") say it once, so theirs are
    held back while it runs (job outcomes are reported by ``run_one``)."""
    loggers = [logging.getLogger(name) for name in ("procrastinate", "psycopg.pool")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


async def _requeue(app: App, job: Job, said: str) -> None:
    """A ``doing`` job nobody runs goes back to the queue; when its task is queued already (its
    queueing lock), that job will resume the task, and this one is closed as failed instead."""
    from procrastinate import exceptions
    from procrastinate.jobs import Status

    assert job.id is not None
    try:
        await app.job_manager.retry_job(job)
        log.warning(said, job.id)
    except exceptions.UniqueViolation:
        await app.job_manager.finish_job_by_id_async(job.id, status=Status.FAILED, delete_job=False)


async def close_unrecorded_ends(app: App, stats: WorkerStats) -> None:
    """Close run jobs whose body the lost database ended and whose retry procrastinate never wrote.

    Seen in fresh-clone runs: a restart ended a task's run; procrastinate's write of the job's
    retry met the same restart and failed (its job task's exception is only logged), so the job
    stayed ``doing`` under a worker that rode the restart out: never stalled, never retried, and
    holding its task's lock, so the job ``release_cut_off`` queued to resume the task waited for
    ever. Such a job is closed as failed here, before ``release_cut_off`` runs: that resumes the
    task (this process's runner is the only one that may) and queues its one job. Retrying the old
    job instead was tried and lost the task: another worker took it while the task still named
    this live runner, skipped it as running elsewhere, and nobody resumed it. A job no longer
    ``doing``, retried since (more attempts), or whose body runs here again is left alone.
    """
    from procrastinate.jobs import Status

    for job_id, (task_id, attempts) in list(stats.unrecorded.items()):
        job = next(iter(await app.job_manager.list_jobs_async(id=job_id)), None)
        if job is not None and job.status == Status.DOING.value and job.attempts == attempts:
            if task_id in stats.running:
                continue  # its body is running here again: not an end left unwritten
            await app.job_manager.finish_job_by_id_async(job_id, status=Status.FAILED, delete_job=False)
            log.warning("job %s, whose retry the lost database did not record, is closed", job_id)
        del stats.unrecorded[job_id]


async def _rescue_stalled(app: App, options: WorkerOptions, ws: Workspace, stats: WorkerStats) -> None:
    """procrastinate's stalled-job recovery: jobs of workers silent too long go back to the queue.
    Also this process's own runs that a short loss of the database cut off (``release_cut_off``),
    when the worker itself rode the loss out and no new round starts.

    When the task already has a queued job (a worker's start-up sweep found the dead runner
    first), that job resumes it, and the stalled one is closed as failed: a task is queued once.
    """
    while True:
        try:
            for job in await app.job_manager.get_stalled_jobs(
                seconds_since_heartbeat=options.stalled_after_s
            ):
                await _requeue(app, job, "job %s of a stalled worker is retried")
            await close_unrecorded_ends(app, stats)
            await release_cut_off(ws, stats)
        except Exception as exc:  # the next round tries again; a worker must not die of a missed poll
            log.warning("could not look for stalled jobs: %s", db_message(exc))
        await asyncio.sleep(options.heartbeat_s)


# ---------------------------------------------------------------------- SQLite
async def _run_local(ws: Workspace, options: WorkerOptions, stats: WorkerStats, progress: Progress) -> None:
    from core.workers.schedules import due_schedule_ids

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
                    body = fire_counted(ws, schedule_id, stats=stats, progress=progress)
                    running[schedule_id] = asyncio.create_task(job(schedule_id, body))
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
