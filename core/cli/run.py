"""Commands that run work: ``run`` a task to its resting status, build the ``demo`` workspace, and
``recover`` tasks whose runner died.

``run`` reports what a finished task cost and why it failed from the event log rather than from
the objects the run held, so the figures are those an audit of the stored task would find, and
``show`` and ``run`` can never disagree.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.common import (
    EXIT_OK,
    EXIT_TASK_FAILED,
    Handler,
    Subparsers,
    emit,
    print_task_summary,
    read_schema,
    task_json,
    with_workspace,
)
from core.config import Settings
from core.domain import TaskStatus
from core.domain.event_codec import decode
from core.domain.event_payloads import RunEnd, StatusChange
from core.domain.facts import EventKind
from core.domain.records import TaskRecord
from core.domain.usage import USAGE_EVENT_KINDS, recorded_spend

if TYPE_CHECKING:
    from core.store import Store
    from core.workspace import Workspace


def register(sub: Subparsers, common: argparse.ArgumentParser) -> dict[str, Handler]:
    p = sub.add_parser("run", parents=[common], help="run a task to its resting status")
    p.add_argument("text", help="the task")
    p.add_argument("--team", metavar="FILE|auto", help="team template file, or 'auto' for a planned team")
    p.add_argument("--output-schema", metavar="FILE", help="JSON schema the final answer must satisfy")
    p.add_argument("--title", help="short title shown in the queue")
    p.add_argument("--wait", action="store_true", help="queued for the workers: wait for its resting status")
    sub.add_parser("recover", parents=[common], help="recover tasks interrupted by a crashed process")
    sub.add_parser(
        "demo",
        parents=[common],
        help="build the demo in its own workspace (demo.sqlite3 beside --db's) by running the real pipeline",
    )
    return {"run": cmd_run, "recover": cmd_recover, "demo": cmd_demo}


async def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from core.first_run import replay_folder, replay_notice, replay_roles, with_replay_model
    from core.tasks.follow import queued_line, wait_for_runner, wait_until_resting
    from core.tasks.service import TaskService

    schema = read_schema(Path(args.output_schema)) if args.output_schema else None
    replayed = replay_roles(settings)
    if replayed:  # roles nothing configured could answer (all of them on a first run), as the desk's
        settings = await asyncio.to_thread(with_replay_model, settings, replay_folder())
        print(f"evidence-desk: {replay_notice(replayed)}", file=sys.stderr)

    async def body(ws: Workspace) -> int:
        service = TaskService(ws)
        task = await service.create(args.text, team=args.team, output_schema=schema, title=args.title)
        if not args.json:
            print(f"task {task.id} created; running...", file=sys.stderr)
        queued = await wait_for_runner(ws)
        task = await service.run(task.id)
        if queued:  # a worker is alive: the run was queued for it
            if not args.wait:
                if not args.json:
                    print(queued_line(task.id), file=sys.stderr)
                await print_task_summary(ws, task, args.json, extra={"queued": True})
                return EXIT_OK
            task = await wait_until_resting(ws, task)
        outcome = await run_outcome(ws.store, task)
        await print_task_summary(ws, task, args.json, extra=outcome)
        if outcome["error"] is not None:
            print(f"evidence-desk: task {task.id} failed: {outcome['error']}", file=sys.stderr)
            return EXIT_TASK_FAILED
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_recover(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.recovery import recover_interrupted

    async def body(ws: Workspace) -> int:
        recovered = await recover_interrupted(ws)
        if args.json:
            emit([task_json(t) for t in recovered])
        else:
            for t in recovered:
                print(f"{t.id[:12]}  recovered -> {t.status.value}")
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)


async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    """The demo goes into its own workspace, never the analyst's: ``demo.sqlite3`` beside the one
    ``--db`` names (or the default one), created if need be; that workspace itself when it is one."""
    from core.demo import build_demo_workspace
    from core.workspace import demo_db_url, is_demo_workspace

    if not is_demo_workspace(settings.db_url):
        settings = settings.model_copy(update={"db_url": demo_db_url(settings.db_url)})

    async def body(ws: Workspace) -> int:
        def progress(task: TaskRecord) -> None:
            if not args.json:
                print(f"{task.id[:12]}  {task.status.value:<17} {task.title}", file=sys.stderr)

        tasks = await build_demo_workspace(ws, on_task=progress)
        if args.json:
            emit([task_json(t) for t in tasks])
        else:
            where = ws.store.display_name
            print(f"demo workspace ready in {where}: {len(tasks)} tasks (open it with --db {where})")
        return EXIT_OK

    return await with_workspace(settings, body)


async def run_outcome(store: Store, task: TaskRecord) -> dict[str, Any]:
    """``error`` (why a failed task failed, else None), token totals and ``cost_usd``.

    Tokens and cost count every answered call once, as ``show`` does (``core.domain.usage``): agent
    turns, a cut-off turn that was retried, planner and output-schema calls, and every validation's
    calls. ``cost_usd`` is a number (0.0 when the models are priced at zero) and None only when no
    call had a known price.
    """
    events = await store.get_task_events(
        task.id,
        resolve=False,  # usage and errors only: never a tool result's text
        payload_texts=False,  # nor a run's output or an answer
        kinds=[
            *USAGE_EVENT_KINDS,
            EventKind.RUN_FINISHED,
            EventKind.TASK_VALIDATION_SNAPSHOTTED,
            EventKind.TASK_STATUS_CHANGED,
        ],
    )
    spent = recorded_spend(events)
    prompt, completion = spent.prompt_tokens, spent.completion_tokens
    run_error: str | None = None
    reason: str | None = None
    for event in events:
        if event.kind not in (EventKind.RUN_FINISHED, EventKind.TASK_STATUS_CHANGED):
            continue
        payload = decode(event)
        if isinstance(payload, RunEnd):
            run_error = payload.error or None
        elif isinstance(payload, StatusChange):
            reason = payload.reason or reason
    error = None
    if task.status is TaskStatus.FAILED:
        error = run_error or reason or "the task failed"
    return {
        "error": error,
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
        "calls": spent.calls,
        "cost_usd": spent.known_cost_usd,
    }
