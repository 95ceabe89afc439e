"""The analyst's work from a terminal: ``feedback``, ``reopen`` and ``undo`` decide; ``claim``,
``release`` and ``next`` take tasks the way the desk does.

Every decision respects claims (``core.tasks.claim_guard``): on a task a colleague holds it is
refused, naming them and when their lease ends, unless ``--take-over``, which is recorded as on
the desk. ``next`` hands out the oldest needs-review task nobody holds and claims it, so a
colleague's ``next`` (or desk) does not get it too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from core.cli.common import (
    EXIT_OK,
    REVIEWER_HELP,
    Handler,
    Subparsers,
    UsageError,
    add_take_over,
    claim_json,
    emit,
    print_task_summary,
    reviewer,
    with_workspace,
)
from core.config import Settings
from core.domain import FeedbackAction
from core.domain.queue import QueueFilter
from core.domain.records import TaskRecord
from core.errors import RefusedAction

if TYPE_CHECKING:
    from core.tasks.review import ReviewService
    from core.workspace import Workspace


def register(sub: Subparsers, common: argparse.ArgumentParser) -> dict[str, Handler]:
    p = sub.add_parser("feedback", parents=[common], help="record the analyst's decision")
    p.add_argument("task_id")
    p.add_argument("action", choices=[a.value for a in FeedbackAction])
    p.add_argument("--prompt", help="what to change (revise)")
    p.add_argument("--note", help="a note kept with the decision")
    p.add_argument("--version", dest="expected_version", type=int, help="task version you reviewed")
    p.add_argument("--no-run", action="store_true", help="revise: record only, do not start the new attempt")
    p.add_argument("--reason", metavar="CODE", help="a reason code (see `evidence-desk reasons`)")
    p.add_argument(
        "--blind-first",
        action="store_true",
        help="record ACTION as your blind first judgement, before seeing the verdict; decide after the reveal",
    )
    p.add_argument(
        "--wait", action="store_true", help="revise queued for the workers: wait for its resting status"
    )
    add_take_over(p)
    p = sub.add_parser(
        "second-review",
        parents=[common],
        help="an independent judgement of a decided task by another reviewer; --due lists yours, "
        "--request queues one",
    )
    p.add_argument("task_id", nargs="?")
    p.add_argument("action", nargs="?", choices=[a.value for a in FeedbackAction])
    p.add_argument("--due", action="store_true", help="list the decided tasks waiting for your second review")
    p.add_argument("--request", action="store_true", help="queue TASK_ID for a second review by someone else")
    p.add_argument("--reason", metavar="CODE", help="a reason code (see `evidence-desk reasons`)")
    p.add_argument("--note", help="a note kept with the judgement")
    p.add_argument("--reviewer", help=REVIEWER_HELP)

    p = sub.add_parser(
        "citation",
        parents=[common],
        help="mark citation N of the verdict right or wrong (the latest mark stands; calibration "
        "counts citation precision)",
    )
    p.add_argument("task_id")
    p.add_argument("number", type=int, metavar="N", help="the citation's number as `show` lists them, from 1")
    p.add_argument("mark", choices=["right", "wrong"])
    p.add_argument(
        "--attempt", type=int, metavar="N", help="the attempt whose verdict is marked (default: the last)"
    )
    p.add_argument("--reviewer", help=REVIEWER_HELP)

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

    p = sub.add_parser("claim", parents=[common], help="claim a task for your review (a lease)")
    p.add_argument("task_id")
    p.add_argument("--take-over", action="store_true", help="take the task from whoever holds it (recorded)")
    p.add_argument("--reviewer", help=REVIEWER_HELP)
    p = sub.add_parser("release", parents=[common], help="release your claim on a task")
    p.add_argument("task_id")
    p.add_argument("--reviewer", help=REVIEWER_HELP)
    p = sub.add_parser("next", parents=[common], help="claim and show the next unclaimed task to review")
    p.add_argument("--filter", dest="text", default="", help="only tasks whose title or text contains this")
    p.add_argument("--reviewer", help=REVIEWER_HELP)
    return {
        "feedback": cmd_feedback,
        "second-review": cmd_second_review,
        "citation": cmd_citation,
        "reopen": cmd_reopen,
        "undo": cmd_undo,
        "claim": cmd_claim,
        "release": cmd_release,
        "next": cmd_next,
    }


# ---------------------------------------------------------------------- decisions
async def cmd_feedback(args: argparse.Namespace, settings: Settings) -> int:
    action = FeedbackAction(args.action)
    if args.blind_first:
        return await _judge(args, settings, "blind")
    if action is FeedbackAction.REVISE and not args.prompt:
        raise UsageError("revise needs --prompt TEXT")

    async def move(review: ReviewService, task: TaskRecord) -> TaskRecord:
        expected = args.expected_version if args.expected_version is not None else task.version
        return await review.feedback(
            task.id, action, expected_version=expected, prompt=args.prompt, note=args.note, reason=args.reason
        )

    run_after = action is FeedbackAction.REVISE and not args.no_run
    return await _decide(args, settings, move, said=None, run_after=run_after)


async def cmd_second_review(args: argparse.Namespace, settings: Settings) -> int:
    if args.due:
        return await _due(args, settings)
    if args.task_id is None:
        raise UsageError("second-review needs TASK_ID (with ACTION, or --request), or --due")
    if args.request:
        return await _request(args, settings)
    if args.action is None:
        raise UsageError("second-review TASK_ID needs your decision: satisfied, revise or abandon")
    return await _judge(args, settings, "second")


async def _due(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.judgements import second_reviews_due

    async def body(ws: Workspace) -> int:
        due = await second_reviews_due(ws.store, settings, reviewer(args, settings))
        if args.json:
            emit([d.model_dump(mode="json") for d in due])
        else:
            for d in due:
                print(f"{d.task_id[:12]}  attempt {d.attempt_index}  decided by {d.decided_by}  ({d.why})")
            print(f"{len(due)} task(s) waiting for your second review", file=sys.stderr)
        return EXIT_OK

    return await with_workspace(settings, body)


async def _request(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.judgements import request_second_review

    async def body(ws: Workspace) -> int:
        task = await ws.store.get_task(args.task_id)
        index = await request_second_review(ws.store, task.id, reviewer=reviewer(args, settings))
        if args.json:
            emit({"task_id": task.id, "attempt_index": index})
        else:
            print(f"queued {task.id[:12]} (attempt {index}) for a second review by another reviewer")
        return EXIT_OK

    return await with_workspace(settings, body)


async def _judge(args: argparse.Namespace, settings: Settings, phase: str) -> int:
    """A judgement that leaves the task as it is: blind first (then ``feedback`` after the reveal)
    or a second review by another reviewer."""
    from core.tasks.judgements import record_judgement

    async def body(ws: Workspace) -> int:
        task = await ws.store.get_task(args.task_id)
        j = await record_judgement(
            ws.store, settings, task.id, args.action, phase=phase, reviewer=reviewer(args, settings),
            reason=args.reason, note=args.note,
        )  # fmt: skip
        if args.json:
            emit({"task_id": task.id, **j.model_dump(mode="json")})
        elif phase == "blind":
            print(f"blind judgement recorded on {task.id[:12]}: {j.decision}; now see the verdict "
                  f"(`evidence-desk show {task.id[:12]}`) and decide with `evidence-desk feedback`")  # fmt: skip
        else:
            print(f"second review recorded on {task.id[:12]} (attempt {j.attempt_index}): {j.decision}")
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_citation(args: argparse.Namespace, settings: Settings) -> int:
    """A mark that leaves the task as it is: no claim is needed, and nothing moves."""
    from core.domain.event_codec import decode_as
    from core.domain.event_payloads import CitationMark
    from core.tasks.citation_marks import mark_citation

    if args.number < 1:
        raise UsageError("citation N counts from 1, as `evidence-desk show` lists the citations")

    async def body(ws: Workspace) -> int:
        task = await ws.store.get_task(args.task_id)
        m = decode_as(
            await mark_citation(
                ws.store, task.id, args.number - 1, args.mark, reviewer=reviewer(args, settings),
                attempt_index=args.attempt,
            ),
            CitationMark,
        )  # fmt: skip
        if args.json:
            emit({"task_id": task.id, **m.model_dump(mode="json")})
        else:
            print(
                f"citation {args.number} ({m.evidence_id}) of attempt {m.attempt_index} on {task.id[:12]}: {m.mark}"
            )
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_reopen(args: argparse.Namespace, settings: Settings) -> int:
    async def move(review: ReviewService, task: TaskRecord) -> TaskRecord:
        return await review.reopen(task.id, reason=args.reason, expected_version=args.expected_version)

    return await _decide(
        args, settings, move, said=lambda task: f"reopened {task.id[:12]} -> {task.status.value}"
    )


async def cmd_undo(args: argparse.Namespace, settings: Settings) -> int:
    async def move(review: ReviewService, task: TaskRecord) -> TaskRecord:
        return await review.undo(
            task.id, expected_version=args.expected_version, note=args.note, take_over=args.take_over
        )

    return await _decide(
        args, settings, move, said=lambda task: f"undone: {task.id[:12]} is back in {task.status.value}"
    )


async def _decide(
    args: argparse.Namespace,
    settings: Settings,
    move: Callable[[ReviewService, TaskRecord], Awaitable[TaskRecord]],
    *,
    said: Callable[[TaskRecord], str] | None,
    run_after: bool = False,
) -> int:
    """One analyst decision: resolve the id, hold the claim while deciding, say what happened,
    run the new attempt a revision asks for, and print the task."""
    from core.tasks.claim_guard import decision_claim
    from core.tasks.follow import queued_line, wait_for_runner, wait_until_resting
    from core.tasks.review import ReviewService
    from core.tasks.service import TaskService

    async def body(ws: Workspace) -> int:
        service = TaskService(ws)
        task = await ws.store.get_task(args.task_id)
        async with decision_claim(ws.store, task.id, reviewer(args, settings), take_over=args.take_over):
            task = await move(ReviewService(service), task)
        if said is not None and not args.json:
            print(said(task), file=sys.stderr)
        if run_after:
            queued = await wait_for_runner(ws)
            task = await service.run(task.id)
            if queued:  # a worker is alive: the new attempt was queued for it
                if getattr(args, "wait", False):
                    task = await wait_until_resting(ws, task)
                elif not args.json:
                    print(queued_line(task.id), file=sys.stderr)
        await print_task_summary(ws, task, args.json)
        return EXIT_OK

    return await with_workspace(settings, body)


# ---------------------------------------------------------------------- claims
async def cmd_claim(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.claims import ClaimHeld, Claims

    async def body(ws: Workspace) -> int:
        claims = Claims(ws.store)
        who = reviewer(args, settings)
        if args.take_over:
            claim = await claims.take_over(args.task_id, who, confirm=True)
        else:
            try:
                claim = await claims.claim(args.task_id, who)
            except ClaimHeld as exc:  # one line that names the way through
                raise RefusedAction(
                    f"task {exc.claim.task_id[:8]} is {exc.claim.describe()}; "
                    "pass --take-over to take it over (recorded)"
                ) from None
        if args.json:
            emit(claim_json(claim))
        else:
            print(f"task {claim.task_id[:12]} {claim.describe()}")
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)


async def cmd_release(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.claims import Claims

    async def body(ws: Workspace) -> int:
        who = reviewer(args, settings)
        task = await ws.store.get_task(args.task_id)
        if not await Claims(ws.store).release(task.id, who):
            raise RefusedAction(f"{who} holds no claim on task {task.id[:8]}")
        if args.json:
            emit({"task_id": task.id, "released_by": who})
        else:
            print(f"released task {task.id[:12]}")
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)


async def cmd_next(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.claims import Claims

    async def body(ws: Workspace) -> int:
        claims = Claims(ws.store)
        task = await claims.next_unclaimed(reviewer(args, settings), QueueFilter(text=args.text))
        if task is None:
            if args.json:
                print("null")
            else:
                print("no unclaimed task needs review", file=sys.stderr)
            return EXIT_OK
        claim = await claims.holder(task.id)
        assert claim is not None
        if not args.json:
            print(f"task {task.id[:12]} {claim.describe()}: {task.title}", file=sys.stderr)
        await print_task_summary(ws, task, args.json, extra={"claim": claim_json(claim)})
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)
