"""Commands for audits and what leaves the workspace: ``export`` a signed case bundle, ``verify``
one, ``import`` one read-only, write an HTML ``report``, and export analyst ``decisions`` as CSV or
JSONL for a spreadsheet or pandas.

Everything written here is scrubbed of local paths and the login name unless ``--include-paths``,
and masked for secrets and ``--redact`` patterns; a file is written whole or not at all.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli.common import EXIT_INPUT, EXIT_OK, Handler, Subparsers, emit, parse_day, with_workspace
from core.config import Settings
from core.domain.status import TaskStatus
from core.errors import InvalidRequest
from core.progress import progress_bar

if TYPE_CHECKING:
    from core.workspace import Workspace


def register(sub: Subparsers, common: argparse.ArgumentParser) -> dict[str, Handler]:
    p = sub.add_parser("export", parents=[common], help="write tasks to a tamper-evident case bundle")
    p.add_argument("task_ids", nargs="+", metavar="TASK_ID")
    p.add_argument("-o", "--output", required=True, metavar="FILE")
    p.add_argument("--include-paths", action="store_true", help="keep local paths and the login name")
    p.add_argument(
        "--redact", action="append", default=[], metavar="PATTERN", help="regex to mask (repeatable)"
    )

    p = sub.add_parser("verify", parents=[common], help="check every hash and event chain of a bundle")
    p.add_argument("bundle", metavar="FILE")

    p = sub.add_parser("import", parents=[common], help="verify a bundle, then add its tasks read-only")
    p.add_argument("bundle", metavar="FILE")
    p.add_argument(
        "--trust",
        action="store_true",
        help="import a bundle that is unsigned or signed by a key not in trusted-keys.txt (this time only)",
    )

    p = sub.add_parser("report", parents=[common], help="write a standalone HTML audit report")
    p.add_argument("task_id")
    p.add_argument("-o", "--output", required=True, metavar="FILE.html")
    p.add_argument("--bundle", metavar="FILE", help="report from a case bundle instead of the workspace")
    p.add_argument("--include-paths", action="store_true", help="keep local paths and the login name")
    p.add_argument(
        "--redact", action="append", default=[], metavar="PATTERN", help="regex to mask (repeatable)"
    )
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
    return {
        "export": cmd_export,
        "verify": cmd_verify,
        "import": cmd_import,
        "report": cmd_report,
        "decisions": cmd_decisions,
    }


async def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle import export_bundle
    from core.bundle.paths import scrub_for_settings
    from core.bundle.signing import workspace_signing_key

    async def body(ws: Workspace) -> int:
        key = await asyncio.to_thread(workspace_signing_key, settings.db_url)
        with progress_bar("export", quiet=args.json):
            summary = await export_bundle(
                ws.store,
                args.task_ids,
                Path(args.output),
                redact=args.redact,
                signing_key=key,
                scrub=scrub_for_settings(settings, include_paths=args.include_paths),
            )
        if args.json:
            emit(
                {
                    "path": str(summary.path),
                    "bundle_id": summary.bundle_id,
                    "task_ids": summary.task_ids,
                    "entries": summary.entries,
                    "events": summary.events,
                    "file_bytes": summary.file_bytes,
                    "redactions": summary.redactions,
                    "signer": summary.signer,
                }
            )
        else:
            signed = (
                f"signed by {summary.signer}" if summary.signer else "unsigned (no OS keyring for the key)"
            )
            print(
                f"wrote {summary.path}: {len(summary.task_ids)} task(s), {summary.events} events, "
                f"{summary.file_bytes:,} bytes, bundle {summary.bundle_id[:16]}, {signed}"
            )
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)


async def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle import verify_bundle
    from core.bundle.signing import known_fingerprints

    known = await asyncio.to_thread(known_fingerprints, settings.db_url)
    with progress_bar("verify", quiet=args.json):
        report = await asyncio.to_thread(verify_bundle, Path(args.bundle), known_keys=known)
    if args.json:
        emit(
            {
                "ok": report.ok,
                "failures": report.failures,
                "entries_checked": report.entries_checked,
                "events_checked": report.events_checked,
                "bundle_id": report.bundle_id,
                "packaging": report.packaging,
                "signature": report.signature.status,
                "signer": report.signature.fingerprint,
            }
        )
    # The OK report is the command's output; failures are diagnostics, for stderr.
    print(report.summary(), file=sys.stdout if report.ok else sys.stderr)
    return EXIT_OK if report.ok else EXIT_INPUT


async def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle import import_bundle
    from core.bundle.signing import known_fingerprints

    async def body(ws: Workspace) -> int:
        known = await asyncio.to_thread(known_fingerprints, settings.db_url)
        with progress_bar("import", quiet=args.json):
            summary = await import_bundle(ws.store, Path(args.bundle), known_keys=known, trust=args.trust)
        if args.json:
            emit(
                {
                    "bundle_id": summary.bundle_id,
                    "imported": summary.imported_task_ids,
                    "skipped": summary.skipped_task_ids,
                    "events": summary.events,
                    "signature": summary.signature,
                    "signer": summary.signer,
                }
            )
        else:
            print(
                f"imported {len(summary.imported_task_ids)} task(s) read-only, "
                f"skipped {len(summary.skipped_task_ids)} already present, {summary.events} events; "
                f"bundle {summary.signature}" + (f" by {summary.signer}" if summary.signer else "")
            )
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)


async def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle import open_bundle, write_report, write_report_from_bundle

    out = Path(args.output)
    if args.bundle:
        with progress_bar("report", unit="step", quiet=args.json):
            opened = await asyncio.to_thread(open_bundle, Path(args.bundle))
            written = await write_report_from_bundle(opened, args.task_id, out, redact=args.redact)
    else:

        async def body(ws: Workspace) -> int:
            from core.bundle.paths import scrub_for_settings

            scrub = scrub_for_settings(settings, include_paths=args.include_paths)
            with progress_bar("report", unit="step", quiet=args.json):
                await write_report(ws.store, args.task_id, out, redact=args.redact, scrub=scrub)
            return EXIT_OK

        await with_workspace(settings, body, recover=False)
        written = out
    if args.json:
        emit({"path": str(written)})
    else:
        print(f"wrote {written}")
    return EXIT_OK


def _statuses(values: list[str] | None) -> list[TaskStatus] | None:
    if not values:
        return None
    allowed = [s.value for s in TaskStatus]
    bad = [v for v in values if v not in allowed]
    if bad:
        raise InvalidRequest(f"unknown status {bad[0]!r}; use one of: {', '.join(allowed)}")
    return [TaskStatus(v) for v in values]


async def cmd_decisions(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle.paths import scrub_for_settings
    from core.exports.decisions import DecisionFilter, write_decision_rows, write_decisions

    flt = DecisionFilter(
        task_ids=args.task,
        statuses=_statuses(args.status),
        reviewer=args.reviewer,
        since=parse_day(args.since, "--since"),
        until=parse_day(args.until, "--until"),
    )
    scrub = scrub_for_settings(settings, include_paths=args.include_paths)

    async def body(ws: Workspace) -> int:
        out, fmt = (args.jsonl, "jsonl") if args.jsonl else (args.csv, "csv")
        if out is None:
            await write_decision_rows(ws.store, sys.stdout, fmt, flt, scrub=scrub, redact=args.redact)
            return EXIT_OK
        summary = await write_decisions(ws.store, Path(out), fmt, flt, scrub=scrub, redact=args.redact)
        print(f"wrote {summary.path}: {summary.rows} decision(s) on {summary.tasks} task(s)", file=sys.stderr)
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)
