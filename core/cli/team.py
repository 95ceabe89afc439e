"""Team commands: ``worker``, ``batch``, ``batches`` and ``schedule add/list/remove``.

What a team runs beside the desks: workers that take queued tasks (procrastinate jobs on
PostgreSQL), batches of tasks from a file, and recurring tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.common import EXIT_OK, Handler, Subparsers, UsageError, emit, read_schema, with_workspace
from core.config import Settings
from core.errors import InvalidRequest

if TYPE_CHECKING:
    from core.store.schedules import ScheduleRecord
    from core.workspace import Workspace


def register(sub: Subparsers, common: argparse.ArgumentParser) -> dict[str, Handler]:
    p = sub.add_parser("worker", parents=[common], help="run queued tasks (PostgreSQL: procrastinate jobs)")
    p.add_argument("--concurrency", type=int, default=1, metavar="N", help="tasks run at once (default 1)")
    p.add_argument("--once", action="store_true", help="stop when nothing is left to run")
    p.add_argument("--name", help="worker name shown in procrastinate's tables and logs")
    p.add_argument("--heartbeat", type=float, default=10.0, metavar="S", help="worker heartbeat interval")
    p.add_argument(
        "--stalled-after",
        type=float,
        default=30.0,
        metavar="S",
        help="retry jobs of workers silent this long",
    )
    p.add_argument("--poll", type=float, default=2.0, metavar="S", help="idle poll interval")
    p.add_argument(
        "--give-up-after",
        type=float,
        metavar="S",
        help="exit non-zero when the database stays unreachable this long (default: wait forever)",
    )

    p = sub.add_parser("batch", parents=[common], help="queue one task per row of a .jsonl or .csv file")
    p.add_argument("file", metavar="FILE.jsonl|FILE.csv")
    p.add_argument("--team", metavar="FILE|auto", help="team template file, or 'auto', for every row")
    p.add_argument("--output-schema", metavar="FILE", help="JSON schema every row's answer must satisfy")

    sub.add_parser("batches", parents=[common], help="list batches with their progress")

    p = sub.add_parser("schedule", parents=[common], help="recurring (heartbeat) tasks")
    ssub = p.add_subparsers(dest="schedule_command", metavar="ACTION", required=True, parser_class=type(p))
    a = ssub.add_parser("add", parents=[common], help="a task that recurs, each firing a new attempt")
    a.add_argument("instructions", help="what each firing should do, e.g. 'Work through HEARTBEAT.md'")
    when = a.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", metavar="EXPR", help="cron expression, e.g. '*/30 * * * *'")
    when.add_argument("--every", type=int, metavar="SECONDS", help="fixed interval in seconds")
    a.add_argument("--checklist", metavar="FILE", help="checklist read afresh at every firing (HEARTBEAT.md)")
    a.add_argument(
        "--verify-heartbeat", action="store_true", help="validate every answer, catching a lazy HEARTBEAT_OK"
    )
    a.add_argument("--title")
    ssub.add_parser("list", parents=[common], help="schedules with next run and last verdict")
    r = ssub.add_parser("remove", parents=[common], help="stop a schedule (its task and evidence stay)")
    r.add_argument("schedule_id")
    return {"worker": cmd_worker, "batch": cmd_batch, "batches": cmd_batches, "schedule": cmd_schedule}


async def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from core.workers.worker import Progress, WorkerOptions, run_worker

    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    options = WorkerOptions(
        concurrency=args.concurrency,
        once=args.once,
        name=args.name,
        heartbeat_s=args.heartbeat,
        stalled_after_s=args.stalled_after,
        poll_s=args.poll,
        give_up_after_s=args.give_up_after,
    )

    async def body(ws: Workspace) -> int:
        stats = await run_worker(ws, options, Progress(quiet=args.json))
        if args.json:
            emit(stats.as_json())
        else:
            print(stats.summary(), file=sys.stderr)
        return EXIT_OK

    # No start-up recovery: a dead runner's task is resumed by the worker, not delivered for review.
    return await with_workspace(settings, body, recover=False)


async def cmd_batch(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.batch_jobs import queue_batch
    from core.workers.batchfile import read_batch_file

    path = Path(args.file)
    batch_id, items = await asyncio.to_thread(read_batch_file, path)
    schema = read_schema(Path(args.output_schema)) if args.output_schema else None
    team = args.team
    template: tuple[Path, str] | None = None
    if team is not None and team != "auto":  # read and checked here; stored with the batch below
        from core.tasks.carried_files import read_carried_source
        from core.team import team_plan_from_text

        source = await read_carried_source(Path(team), what="team template")
        team_plan_from_text(source, Path(team).name, source=team)
        template = (Path(team), source)

    async def body(ws: Workspace) -> int:
        from core.tasks.carried_files import store_carried

        team_spec = team
        if template is not None:  # the batch holds the template: every row's worker reads it here
            team_spec = await store_carried(ws.store, template[1], template[0], owner=batch_id)
        bar = _bar(len(items), quiet=args.json)
        try:
            result, deferred = await queue_batch(
                ws.store,
                batch_id,
                str(path),
                items,
                team_spec=team_spec,
                output_schema=schema,
                on_progress=bar,
            )
        finally:
            bar.close()
        if args.json:
            emit(
                {
                    "batch_id": batch_id,
                    "task_ids": result.task_ids,
                    "created": result.created,
                    "existing": result.existing,
                }
            )
        else:
            where = f", {deferred} job(s) for the workers" if deferred else ""
            print(
                f"batch {batch_id[:12]}: {result.created} task(s) queued, {result.existing} already queued{where}"
            )
        return EXIT_OK

    return await with_workspace(settings, body)


class _Bar:
    def __init__(self, total: int, quiet: bool) -> None:
        self._tqdm: Any = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            from core.terminal import raw_stream

            self._tqdm = tqdm(total=total, unit="row", file=raw_stream(sys.stderr), desc="batch")

    def __call__(self, n: int) -> None:
        if self._tqdm is not None:
            self._tqdm.update(n)

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()


def _bar(total: int, *, quiet: bool) -> _Bar:
    return _Bar(total, quiet)


async def cmd_batches(args: argparse.Namespace, settings: Settings) -> int:
    from core.store.batches import BatchRepository

    async def body(ws: Workspace) -> int:
        rows = await BatchRepository(ws.store).progress()
        if args.json:
            emit(
                [
                    {
                        "batch_id": b.batch_id,
                        "source": b.source,
                        "total": b.total,
                        "done": b.done,
                        "by_status": {s.value: n for s, n in b.by_status.items()},
                    }
                    for b in rows
                ]
            )
        else:
            for b in rows:
                print(f"{b.batch_id[:12]}  {b.done}/{b.total} done  {b.source}")
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)


async def cmd_schedule(args: argparse.Namespace, settings: Settings) -> int:
    from core.store.schedules import ScheduleRepository
    from core.workers.schedules import add_schedule

    async def body(ws: Workspace) -> int:
        repo = ScheduleRepository(ws.store)
        if args.schedule_command == "add":
            s = await add_schedule(
                ws,
                args.instructions,
                cron=args.cron,
                interval_s=args.every,
                checklist=Path(args.checklist) if args.checklist else None,
                verify_heartbeat=args.verify_heartbeat,
                title=args.title,
            )
            if args.json:
                emit(s.model_dump(mode="json"))
            else:
                print(f"schedule {s.id} for task {s.task_id}; next run {s.next_run_at.isoformat()}")
            return EXIT_OK
        if args.schedule_command == "list":
            rows = await repo.all()
            if args.json:
                emit([s.model_dump(mode="json") for s in rows])
            for s in [] if args.json else rows:
                when = s.cron or f"every {s.interval_s}s"
                print(
                    f"{s.id[:12]}  {when:<16} next {s.next_run_at:%Y-%m-%d %H:%M:%S}  last {_last_firing(s)}"
                )
            return EXIT_OK
        matches = [s for s in await repo.all() if s.id.startswith(args.schedule_id.lower())]
        if len(matches) != 1:
            problem = "no schedule" if not matches else "more than one schedule"
            raise InvalidRequest(f"{problem} matches {args.schedule_id!r}")
        await repo.remove(matches[0].id)
        if not args.json:
            print(f"schedule {matches[0].id} removed; its task {matches[0].task_id} and its evidence stay")
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)


def _last_firing(s: ScheduleRecord) -> str:
    """How the last firing ended and why (a failure's reason in full); ``-`` before the first."""
    from core.store.schedules import FiringStatus

    if s.last_status is FiringStatus.FAILED:
        return f"failed: {s.last_reason or s.last_verdict}"
    return s.last_verdict or "-"  # "accepted", "skipped: ...", "stopped: ..." say how it ended
