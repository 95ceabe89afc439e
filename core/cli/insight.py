"""Commands that look across attempts and verdicts: ``diff``, ``override``, ``calibration``.

Bad input (an attempt that does not exist, an unknown status, an unreadable date) raises core's
``InvalidRequest``: one line on stderr and exit code 4, and nothing changed.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli.common import (
    EXIT_OK,
    Handler,
    Subparsers,
    add_take_over,
    emit,
    parse_day,
    reviewer,
    with_workspace,
)
from core.config import Settings
from core.errors import InvalidRequest

if TYPE_CHECKING:
    from core.workspace import Workspace


def register(sub: Subparsers, common: argparse.ArgumentParser) -> dict[str, Handler]:
    p = sub.add_parser("diff", parents=[common], help="what changed between two attempts of a task")
    p.add_argument("task_id")
    p.add_argument("--a", type=int, metavar="N", help="the earlier attempt (default: the one before --b)")
    p.add_argument("--b", type=int, metavar="M", help="the later attempt (default: the last)")
    p = sub.add_parser(
        "override", parents=[common], help="record your own verdict on an attempt, beside the validator's"
    )
    p.add_argument("task_id")
    p.add_argument(
        "--status", required=True, help="accepted, rejected, insufficient_evidence, validator_error"
    )
    p.add_argument("--category", default="none", help="goal_missed, incomplete, rule_violation, ... or none")
    p.add_argument("--note", default="", help="why you disagree (kept with the verdict)")
    p.add_argument("--attempt", type=int, metavar="N", help="the attempt judged (default: the last)")
    p.add_argument("--reason", metavar="CODE", help="a reason code (see `evidence-desk reasons`)")
    add_take_over(p)  # a verdict is a decision: claims apply (core.tasks.claim_guard)
    p = sub.add_parser("calibration", parents=[common], help="how far the validator agrees with analysts")
    p.add_argument("--since", metavar="YYYY-MM-DD", help="decisions on or after this day (UTC)")
    p.add_argument("--until", metavar="YYYY-MM-DD", help="decisions before this day (UTC)")
    p.add_argument("--validator-model", metavar="MODEL", help="only verdicts by this validator model")
    p.add_argument(
        "--validator-version", metavar="ID", help="only verdicts by this validator version (or prefix)"
    )
    p.add_argument("--category", help="only verdicts of this category")
    p.add_argument("--batch", metavar="ID", help="only tasks queued by this batch")
    p.add_argument("--reviewer", help="only decisions by this reviewer")
    p.add_argument("--reason", metavar="CODE", help="only decisions given this reason code")
    p.add_argument("--cases", action="store_true", help="also list the task ids behind each cell")
    p.add_argument("--csv", metavar="FILE", help="also write the figures as CSV")
    p.add_argument("--html", metavar="FILE", help="also write the figures as a standalone HTML page")
    sub.add_parser("reasons", parents=[common], help="the workspace's reason codes and what each means")
    return {
        "diff": cmd_diff,
        "override": cmd_override,
        "calibration": cmd_calibration,
        "reasons": cmd_reasons,
    }


async def cmd_diff(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.diff import format_diff, load_attempt_diff

    async def body(ws: Workspace) -> int:
        a = args.a if args.a is not None or args.b is None else args.b - 1
        d = await load_attempt_diff(ws.store, args.task_id, a, args.b)  # by hashes: no evidence is read
        if args.json:
            emit(d.model_dump(mode="json"))
        else:
            print(format_diff(d))
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_override(args: argparse.Namespace, settings: Settings) -> int:
    from core.domain.reasons import check_reason, load_reasons
    from core.tasks.claim_guard import decision_claim
    from core.tasks.override import format_override, record_override

    reason = check_reason(args.reason, load_reasons(settings.reasons))

    async def body(ws: Workspace) -> int:
        me = reviewer(args, settings)
        async with decision_claim(ws.store, args.task_id, me, take_over=args.take_over):
            v = await record_override(
                ws.store,
                args.task_id,
                status=args.status,
                category=args.category,
                note=args.note,
                reviewer=me,
                attempt_index=args.attempt,
                reason=reason,
            )
        if args.json:
            emit(v.model_dump(mode="json"))
        else:
            print(f"attempt {v.attempt_index}: {format_override(v)}")
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_calibration(args: argparse.Namespace, settings: Settings) -> int:
    from core.calibration import CalibrationFilter, calibrate, calibration_csv, format_calibration

    async def body(ws: Workspace) -> int:
        flt = CalibrationFilter(
            since=parse_day(args.since, "--since"),
            until=parse_day(args.until, "--until"),
            validator_model=args.validator_model,
            validator_version=args.validator_version,
            category=args.category,
            batch_id=args.batch,
            reviewer=args.reviewer,
            reason=args.reason,
        )
        cal = await calibrate(ws.store, flt, cases=args.cases)
        from core.calibration_html import calibration_html

        for path, render in ((args.csv, calibration_csv), (args.html, calibration_html)):
            if path:
                try:
                    await asyncio.to_thread(Path(path).write_text, render(cal), encoding="utf-8")
                except OSError as exc:
                    raise InvalidRequest(f"cannot write {path}: {exc.strerror or exc}") from None
        if args.json:
            emit(cal.as_json())
        else:
            print(format_calibration(cal))
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_reasons(args: argparse.Namespace, settings: Settings) -> int:
    from core.domain.reasons import load_reasons

    reasons = load_reasons(settings.reasons)
    if args.json:
        emit([r.model_dump() for r in reasons])
    else:
        width = max(len(r.code) for r in reasons)
        for r in reasons:
            print(f"{r.key or ' '}  {r.code.ljust(width)}  {r.description}")
    return EXIT_OK
