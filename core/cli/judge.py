"""Commands that improve the judge offline: ``revalidate`` (shadow replay of a candidate validator)
and ``compare-validators``.

Bad input (an unknown candidate, a task id that matches nothing, an unreadable day) is one line
on stderr and exit code 4, with nothing changed; a replay stopped at any point resumes when run
again.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.cli.common import EXIT_OK, Handler, Subparsers, emit, parse_day, with_workspace
from core.config import Settings
from core.errors import InvalidRequest

if TYPE_CHECKING:
    from core.judge.replay import ReplayProgress
    from core.workspace import Workspace


def register(sub: Subparsers, common: argparse.ArgumentParser) -> dict[str, Handler]:
    p = sub.add_parser(
        "revalidate",
        parents=[common],
        help="replay a candidate validator on decided tasks and store its shadow verdicts",
    )
    p.add_argument("--candidate", required=True, metavar="NAME", help="a [validator_candidates.NAME] entry")
    p.add_argument(
        "--tasks", nargs="+", metavar="ID", default=["decided"], help="'decided' (default) or task ids"
    )
    p.add_argument("--since", metavar="YYYY-MM-DD", help="only attempts decided on or after this day (UTC)")
    p.add_argument("--batch", metavar="ID", help="only tasks queued by this batch")
    p.add_argument(
        "--limit", type=int, metavar="N", help="at most N decided attempts (oldest decisions first)"
    )
    p.add_argument("--concurrency", type=int, default=4, metavar="N", help="verdicts at once (default 4)")
    p = sub.add_parser(
        "compare-validators",
        parents=[common],
        help="two validators against the analysts: agreement, McNemar's test, differing cases",
    )
    p.add_argument("current", metavar="CURRENT", help="'live', a candidate name or a validator version")
    p.add_argument("candidate", metavar="CANDIDATE", help="a candidate name or a validator version")
    return {"revalidate": cmd_revalidate, "compare-validators": cmd_compare}


async def _task_ids(ws: Workspace, given: list[str]) -> list[str] | None:
    if given == ["decided"]:
        return None
    if "decided" in given:
        raise InvalidRequest("--tasks takes 'decided' alone, or task ids")
    return [(await ws.store.get_task(t)).id for t in given]  # a prefix or an unknown id is refused here


def _progress_printer(json_out: bool) -> Callable[[ReplayProgress], None]:
    def show(p: ReplayProgress) -> None:
        print(
            f"revalidate: {p.done}/{p.total} task {p.task_id} #{p.attempt_index}: {p.status}", file=sys.stderr
        )

    return show


async def cmd_revalidate(args: argparse.Namespace, settings: Settings) -> int:
    from core.judge.candidates import load_candidate
    from core.judge.replay import ReplaySelection, revalidate

    if args.limit is not None and args.limit < 1:
        raise InvalidRequest("--limit must be at least 1")
    if not 1 <= args.concurrency <= 64:
        raise InvalidRequest("--concurrency must be 1..64")
    candidate = load_candidate(settings, args.candidate)
    since = parse_day(args.since, "--since")

    async def body(ws: Workspace) -> int:
        selection = ReplaySelection(await _task_ids(ws, args.tasks), since, args.batch, args.limit)
        summary = await revalidate(
            ws, candidate, selection, concurrency=args.concurrency, on_progress=_progress_printer(args.json)
        )
        if args.json:
            emit(summary.as_json())
        else:
            print(
                f"candidate {summary.candidate} (validator {summary.validator_version}): "
                f"{summary.judged} judged now, {summary.already_done} judged before, "
                f"{len(summary.skipped)} with nothing to judge, of {summary.selected} decided attempts; "
                + ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
            )
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    from core.judge.compare import compare_validators, format_comparison

    async def body(ws: Workspace) -> int:
        comparison = await compare_validators(ws.store, settings, args.current, args.candidate)
        if args.json:
            emit(comparison.as_json())
        else:
            print(format_comparison(comparison))
        return EXIT_OK

    return await with_workspace(settings, body)
