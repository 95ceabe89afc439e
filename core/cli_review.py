"""Command-line moves that take a decision back: ``reopen`` and ``undo``.

Kept out of ``core/cli.py`` (which holds the original commands) so each area's commands live in
one small module; ``core/cli.py`` only adds these parsers and handlers.

Every decision from the command line respects claims (``core.tasks.claim_guard``): on a task a
colleague holds it is refused, naming them and when their lease ends, unless ``--take-over``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from core.config import Settings
from core.domain.records import TaskRecord

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]


def add_take_over(parser: argparse.ArgumentParser) -> None:
    """The confirmation a decision on a task someone else has claimed needs (recorded as on the desk)."""
    parser.add_argument(
        "--take-over",
        action="store_true",
        help="decide even though another reviewer holds the task (recorded)",
    )


def add_review_commands(sub: Any, common: argparse.ArgumentParser) -> dict[str, Handler]:
    """Add ``reopen`` and ``undo`` to the command line; returns their handlers by name."""
    p = sub.add_parser("reopen", parents=[common], help="reopen a closed or abandoned task, with a reason")
    p.add_argument("task_id")
    p.add_argument("--reason", required=True, help="why the task is reopened (kept as the decision's note)")
    p.add_argument("--version", dest="expected_version", type=int, help="task version you reviewed")
    add_take_over(p)
    p = sub.add_parser(
        "undo", parents=[common], help="undo the last decision on a task, if no one acted since"
    )
    p.add_argument("task_id")
    p.add_argument("--note", help="a note kept with the undo")
    p.add_argument("--version", dest="expected_version", type=int, help="task version you reviewed")
    add_take_over(p)
    return {"reopen": cmd_reopen, "undo": cmd_undo}


async def cmd_reopen(args: argparse.Namespace, settings: Settings) -> int:
    return await _review_move(
        args,
        settings,
        lambda review, task: review.reopen(
            task.id, reason=args.reason, expected_version=args.expected_version
        ),
        lambda task: f"reopened {task.id[:12]} -> {task.status.value}",
    )


async def cmd_undo(args: argparse.Namespace, settings: Settings) -> int:
    return await _review_move(
        args,
        settings,
        lambda review, task: review.undo(task.id, expected_version=args.expected_version, note=args.note),
        lambda task: f"undone: {task.id[:12]} is back in {task.status.value}",
    )


async def _review_move(
    args: argparse.Namespace,
    settings: Settings,
    move: Callable[[Any, TaskRecord], Awaitable[TaskRecord]],
    said: Callable[[TaskRecord], str],
) -> int:
    """One analyst move from the command line: resolve the id, move, say what happened, print the task."""
    from core.cli import _print_task_summary, _with_workspace

    async def body(ws: Any) -> int:
        from core.tasks.claim_guard import decision_claim
        from core.tasks.review import ReviewService, reviewer_name
        from core.tasks.service import TaskService

        review = ReviewService(TaskService(ws))
        task = await ws.store.get_task(args.task_id)
        async with decision_claim(
            ws.store, task.id, reviewer_name(settings.reviewer), take_over=args.take_over
        ):
            task = await move(review, task)
        if not args.json:
            print(said(task), file=sys.stderr)
        await _print_task_summary(ws, task, args.json)
        return 0

    return await _with_workspace(settings, body)


__all__ = ["add_review_commands", "add_take_over"]
