"""``evidence-desk decisions``: every analyst decision as CSV or JSONL, for a spreadsheet or pandas.

Kept out of ``core/cli.py`` (one small module per area). Without ``--csv`` or ``--jsonl`` the CSV
goes to standard output. Bad input (an unreadable date, an unknown status) is one line on stderr
and exit code 4; a file is written whole or not at all.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.config import Settings
from core.domain.status import TaskStatus

Handler = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]
EXIT_INPUT = 4


def add_export_commands(sub: Any, common: argparse.ArgumentParser) -> dict[str, Handler]:
    """Add ``decisions``; returns its handler by name."""
    p = sub.add_parser(
        "decisions", parents=[common], help="export analyst decisions as CSV or JSONL (spreadsheets, pandas)"
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--csv", metavar="FILE", help="write RFC 4180 CSV (default: CSV on standard output)")
    where.add_argument("--jsonl", metavar="FILE", help="write one JSON object per line")
    p.add_argument("--task", action="append", metavar="ID", help="only this task (repeatable; prefix ok)")
    p.add_argument("--status", action="append", metavar="STATUS", help="only tasks now in this status")
    p.add_argument("--reviewer", help="only decisions by this reviewer")
    p.add_argument("--since", metavar="YYYY-MM-DD", help="decisions on or after this day (UTC)")
    p.add_argument("--until", metavar="YYYY-MM-DD", help="decisions before this day (UTC)")
    p.add_argument("--include-paths", action="store_true", help="keep local paths and the login name")
    p.add_argument("--redact", action="append", default=[], metavar="PATTERN", help="regex to mask")
    return {"decisions": cmd_decisions}


def _day(value: str | None, what: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"--{what} {value!r} is not a date (use YYYY-MM-DD)") from None


def _statuses(values: list[str] | None) -> list[TaskStatus] | None:
    if not values:
        return None
    allowed = [s.value for s in TaskStatus]
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown status {bad[0]!r}; use one of: {', '.join(allowed)}")
    return [TaskStatus(v) for v in values]


async def cmd_decisions(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle.paths import scrub_for_settings
    from core.cli import _with_workspace
    from core.exports.decisions import DecisionFilter, write_decision_rows, write_decisions

    try:
        flt = DecisionFilter(
            task_ids=args.task,
            statuses=_statuses(args.status),
            reviewer=args.reviewer,
            since=_day(args.since, "since"),
            until=_day(args.until, "until"),
        )
    except ValueError as exc:
        print(f"evidence-desk: {exc}", file=sys.stderr)
        return EXIT_INPUT
    scrub = scrub_for_settings(settings, include_paths=args.include_paths)

    async def body(ws: Any) -> int:
        out, fmt = (args.jsonl, "jsonl") if args.jsonl else (args.csv, "csv")
        if out is None:
            await write_decision_rows(ws.store, sys.stdout, fmt, flt, scrub=scrub, redact=args.redact)
            return 0
        summary = await write_decisions(ws.store, Path(out), fmt, flt, scrub=scrub, redact=args.redact)
        print(f"wrote {summary.path}: {summary.rows} decision(s) on {summary.tasks} task(s)", file=sys.stderr)
        return 0

    return await _with_workspace(settings, body, recover=False)
