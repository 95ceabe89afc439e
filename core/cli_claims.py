"""Claims from the command line: ``claim``, ``release``, ``next`` and ``list --assigned-to-me``.

A reviewer working from a terminal takes tasks the same way the desk does, through
``core.tasks.claims``: ``next`` hands out the oldest needs-review task nobody holds, and claims it
so a colleague's ``next`` (or desk) does not get it too. ``list`` gains two filters that show one
reviewer's queue instead of the whole workspace.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from core.config import Settings
from core.domain.claims import ClaimRecord
from core.domain.queue import QueueFilter

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]

_REVIEWER_HELP = "act as this reviewer (default: the configured reviewer, else your login)"


def add_claim_commands(
    sub: Any, common: argparse.ArgumentParser, list_handler: Handler
) -> dict[str, Handler]:
    """Add ``claim``, ``release`` and ``next``, and ``list``'s reviewer filters; returns handlers."""
    p = sub.add_parser("claim", parents=[common], help="claim a task for your review (a lease)")
    p.add_argument("task_id")
    p.add_argument("--take-over", action="store_true", help="take the task from whoever holds it (recorded)")
    p.add_argument("--reviewer", help=_REVIEWER_HELP)
    p = sub.add_parser("release", parents=[common], help="release your claim on a task")
    p.add_argument("task_id")
    p.add_argument("--reviewer", help=_REVIEWER_HELP)
    p = sub.add_parser("next", parents=[common], help="claim and show the next unclaimed task to review")
    p.add_argument("--filter", dest="text", default="", help="only tasks whose title or text contains this")
    p.add_argument("--reviewer", help=_REVIEWER_HELP)
    listing = sub.choices["list"]
    mine = listing.add_mutually_exclusive_group()
    mine.add_argument("--assigned-to-me", action="store_true", help="only tasks you have claimed")
    mine.add_argument("--reviewer", help="only tasks this reviewer has claimed")

    async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
        if args.assigned_to_me or args.reviewer:
            return await _list_claimed(args, settings)
        return await list_handler(args, settings)

    return {"claim": cmd_claim, "release": cmd_release, "next": cmd_next, "list": cmd_list}


def _who(args: argparse.Namespace, settings: Settings) -> str:
    from core.tasks.review import reviewer_name

    return str(args.reviewer) if args.reviewer else reviewer_name(settings.reviewer)


def claim_json(claim: ClaimRecord) -> dict[str, Any]:
    return {
        "task_id": claim.task_id,
        "reviewer": claim.reviewer,
        "claimed_at": claim.claimed_at.isoformat(),
        "expires_at": claim.expires_at.isoformat(),
    }


async def cmd_claim(args: argparse.Namespace, settings: Settings) -> int:
    from core.cli import _emit, _with_workspace
    from core.tasks.claims import Claims

    async def body(ws: Any) -> int:
        claims = Claims(ws.store)
        reviewer = _who(args, settings)
        if args.take_over:
            claim = await claims.take_over(args.task_id, reviewer, confirm=True)
        else:
            claim = await claims.claim(args.task_id, reviewer)
        if args.json:
            _emit(claim_json(claim))
        else:
            print(f"task {claim.task_id[:12]} {claim.describe()}")
        return 0

    return await _with_workspace(settings, body, recover=False)


async def cmd_release(args: argparse.Namespace, settings: Settings) -> int:
    from core.cli import _emit, _with_workspace
    from core.errors import RefusedAction
    from core.tasks.claims import Claims

    async def body(ws: Any) -> int:
        reviewer = _who(args, settings)
        task = await ws.store.get_task(args.task_id)
        if not await Claims(ws.store).release(task.id, reviewer):
            raise RefusedAction(f"{reviewer} holds no claim on task {task.id[:8]}")
        if args.json:
            _emit({"task_id": task.id, "released_by": reviewer})
        else:
            print(f"released task {task.id[:12]}")
        return 0

    return await _with_workspace(settings, body, recover=False)


async def cmd_next(args: argparse.Namespace, settings: Settings) -> int:
    from core.cli import _print_task_summary, _with_workspace
    from core.tasks.claims import Claims

    async def body(ws: Any) -> int:
        claims = Claims(ws.store)
        reviewer = _who(args, settings)
        task = await claims.next_unclaimed(reviewer, QueueFilter(text=args.text))
        if task is None:
            if args.json:
                print("null")
            else:
                print("no unclaimed task needs review", file=sys.stderr)
            return 0
        claim = await claims.holder(task.id)
        assert claim is not None
        if not args.json:
            print(f"task {task.id[:12]} {claim.describe()}: {task.title}", file=sys.stderr)
        await _print_task_summary(ws, task, args.json, extra={"claim": claim_json(claim)})
        return 0

    return await _with_workspace(settings, body, recover=False)


async def _list_claimed(args: argparse.Namespace, settings: Settings) -> int:
    from core.cli import _emit, _task_json, _with_workspace
    from core.domain.status import TaskStatus
    from core.tasks.claims import Claims

    async def body(ws: Any) -> int:
        reviewer = str(args.reviewer) if args.reviewer else _who(args, settings)
        statuses = {TaskStatus(s) for s in args.status}
        rows = []
        for claim in await Claims(ws.store).assigned(reviewer):
            task = await ws.store.get_task(claim.task_id)
            if not statuses or task.status in statuses:
                rows.append((task, claim))
        if args.json:
            _emit([{**_task_json(t), "claim": claim_json(c)} for t, c in rows])
            return 0
        for t, c in rows:
            print(f"{t.id[:12]}  {t.status.value:<17} v{t.version:<3} {t.title}  [{c.describe()}]")
        return 0

    return await _with_workspace(settings, body, recover=False)


__all__ = ["add_claim_commands", "claim_json"]
