"""Deferring work to ``evidence-desk worker`` processes through procrastinate.

With the tasks, not the workers: a task service decides where a run happens (here, or by a
worker); the worker process in ``core.workers`` only consumes the jobs deferred here.

procrastinate keeps its jobs in the workspace's own PostgreSQL database (its ``procrastinate_*``
tables), so a task and the job that runs it live in one place and one backup. Its schema is
applied by the first worker that starts (and by anything that defers with ``defer_runs = true``),
under the same advisory lock our migrations take: procrastinate versions its schema itself, and
tying it to one of our alembic revisions would pin the workspace to one procrastinate release.

Every job for a task carries the task id as its ``lock`` (two jobs of one task never run at once)
and ``queueing_lock`` (a task is queued at most once); a second defer is a no-op.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.engine import make_url

from core.store.engine import MIGRATION_LOCK_KEY

if TYPE_CHECKING:
    from procrastinate import App

    from core.store import Store
    from core.workspace import Workspace

log = logging.getLogger(__name__)

QUEUE = "evidence-desk"
RUN_TASK = "evidence_desk.run_task"
FIRE_SCHEDULE = "evidence_desk.fire_schedule"
SHADOW_VERDICT = "evidence_desk.shadow_verdict"  # one decided attempt, judged again (core.judge.replay_queue)
# A worker counts as alive while its procrastinate heartbeat (every 10 s by default) is this fresh.
ALIVE_WITHIN_S = 60.0
DEFER_CHUNK = 500  # jobs per batch-defer statement


def libpq_conninfo(url: str) -> str:
    """The workspace's SQLAlchemy URL as psycopg wants it (no driver suffix)."""
    parsed = make_url(url).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


def make_app(url: str, **pool: Any) -> App:
    """A procrastinate app on the workspace database; the job bodies are registered by the worker."""
    from procrastinate import App, PsycopgConnector

    connector = PsycopgConnector(conninfo=libpq_conninfo(url), **pool)
    return App(connector=connector)


_QUEUE_TABLE_EXISTS = (
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
    "ON n.oid = c.relnamespace WHERE c.relname = 'procrastinate_jobs' "
    "AND n.nspname = ANY(current_schemas(false)))"
)


async def has_queue_schema(store: Store) -> bool:
    if store.is_sqlite:
        return False
    async with store.engine.connect() as conn:
        found = (await conn.execute(text("SELECT to_regclass('procrastinate_jobs')"))).scalar()
    return found is not None


async def ensure_queue_schema(store: Store) -> None:
    """Apply procrastinate's schema once per database, under the migration lock (two workers at once)."""
    from procrastinate.schema import SchemaManager

    if await has_queue_schema(store):
        return
    schema = SchemaManager.get_schema()
    async with store.write_engine.begin() as conn:
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        # Read pg_class itself, not to_regclass(): the catalog cache answers to_regclass from what
        # this transaction saw when it began (an advisory lock does not refresh it), so a start
        # that waited on the lock while another created the tables still "saw" none and ran the
        # schema again (DuplicateObjectError on procrastinate_job_status). A query on pg_class
        # reads with the statement's own snapshot, taken after the lock.
        if not (await conn.execute(text(_QUEUE_TABLE_EXISTS))).scalar():
            raw = await conn.get_raw_connection()
            await raw.driver_connection.execute(schema)  # type: ignore[union-attr]


async def tasks_owned_by_jobs(store: Store, task_ids: Iterable[str]) -> set[str]:
    """The tasks whose procrastinate job is queued or doing (live, or stalled and so retryable).

    Such a task belongs to the queue: its job's next run resumes it. Crash recovery, which would
    end it for review because it believes nobody will run it again, must leave it alone.
    """
    ids = list(task_ids)
    if not ids or not await has_queue_schema(store):
        return set()
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT DISTINCT lock FROM procrastinate_jobs "
                "WHERE lock = ANY(:ids) AND status IN ('todo', 'doing')"
            ),
            {"ids": ids},
        )
        return {str(r[0]) for r in rows}


async def worker_alive(store: Store, within_s: float = ALIVE_WITHIN_S) -> bool:
    """A worker heartbeat in procrastinate's worker table is fresh: deferred work will be picked up."""
    if not await has_queue_schema(store):
        return False
    async with store.engine.connect() as conn:
        alive = await conn.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM procrastinate_workers "
                "WHERE last_heartbeat > now() - make_interval(secs => :s))"
            ),
            {"s": within_s},
        )
        return bool(alive.scalar())


async def should_defer(ws: Workspace) -> bool:
    """The ``defer_runs`` setting: never on SQLite; on PostgreSQL forced, off, or while a worker lives."""
    if ws.store.is_sqlite or ws.settings.defer_runs is False:
        return False
    if ws.settings.defer_runs is True:
        return True
    return await worker_alive(ws.store)


async def defer_tasks(
    store: Store, task_ids: Iterable[str], *, on_progress: Callable[[int], None] | None = None
) -> int:
    """Queue a run job per task (one job per task at most); returns how many were new.

    ``on_progress`` hears each chunk's size once it is queued.
    """
    ids = list(task_ids)
    if not ids:
        return 0
    async with job_deferrer(store) as defer:
        queued = 0
        for start in range(0, len(ids), DEFER_CHUNK):
            chunk = ids[start : start + DEFER_CHUNK]
            queued += await defer(chunk)
            if on_progress is not None:
                on_progress(len(chunk))
        return queued


@asynccontextmanager
async def job_deferrer(store: Store) -> AsyncIterator[Callable[[Sequence[str]], Awaitable[int]]]:
    """A function that queues the run jobs of tasks, ``DEFER_CHUNK`` in one statement
    (procrastinate's batch defer), over one connection pool held for the block.

    One round trip per job made a 100k-row batch take seven times longer on PostgreSQL than on
    SQLite. The function returns how many of the jobs were new.
    """
    await ensure_queue_schema(store)
    app = make_app(store.url, min_size=1, max_size=2)
    async with app.open_async():

        async def defer(task_ids: Sequence[str]) -> int:
            ids = list(task_ids)
            return sum(
                [await _defer_chunk(app, ids[i : i + DEFER_CHUNK]) for i in range(0, len(ids), DEFER_CHUNK)]
            )

        yield defer


async def _defer_chunk(app: App, task_ids: list[str]) -> int:
    """All of ``task_ids`` in one statement; one by one if any of them is queued already.

    The batch insert is one statement, so a single task already queued (a worker's start-up sweep
    deferring the same open tasks at this moment) fails it whole and inserts nothing; the chunk is
    then deferred job by job, each duplicate refused by its queueing lock as before.
    """
    from procrastinate import exceptions

    unique = list(dict.fromkeys(task_ids))  # one statement cannot hold the same queueing lock twice
    # Each job its own locks, so not a deferrer's batch_defer_async (one lock for all its jobs).
    jobs = [_deferrer(app, t).make_new_job(task_id=t) for t in unique]
    try:
        await app.job_manager.batch_defer_jobs_async(jobs=jobs)
    except exceptions.AlreadyEnqueued:
        pass
    else:
        return len(unique)
    queued = 0
    for task_id in unique:
        try:
            await _deferrer(app, task_id).defer_async(task_id=task_id)
            queued += 1
        except exceptions.AlreadyEnqueued:
            pass
    return queued


def _deferrer(app: App, task_id: str) -> Any:
    """The run job of ``task_id``: its lock (never two runs at once) and queueing lock (queued once)."""
    return app.configure_task(RUN_TASK, queue=QUEUE, lock=task_id, queueing_lock=task_id)


async def defer_if_workers(ws: Workspace, task_id: str) -> bool:
    """The service's hook: True when the run was handed to the workers instead of run here."""
    if not await should_defer(ws):
        return False
    await defer_tasks(ws.store, [task_id])
    return True


async def abort_task_jobs(store: Store, task_id: str) -> int:
    """Ask procrastinate to abort the task's running job and drop its queued one (an abandon)."""
    if not await has_queue_schema(store):
        return 0
    app = make_app(store.url, min_size=1, max_size=1)
    done = 0
    async with app.open_async():
        for status in ("todo", "doing"):
            for job in await app.job_manager.list_jobs_async(lock=task_id, status=status):
                if job.id is not None and await app.job_manager.cancel_job_by_id_async(job.id, abort=True):
                    done += 1
    return done
