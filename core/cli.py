"""The headless command line (``evidence-desk SUBCOMMAND``).

Exit codes are part of the interface: 0 success, 2 usage, 3 refused action (illegal transition,
stale version), 4 configuration or input error (bad script, unreadable database), 5 ``run``'s task
ended ``failed`` (the reason is printed on stderr; ``--json`` carries it as ``error``). Errors are one
line on stderr, never a traceback, and leave the database unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from core.cli_outcome import EXIT_TASK_FAILED, run_outcome
from core.cli_review import add_take_over
from core.cli_show import print_dossier as _print_dossier
from core.config import Settings, load_settings, user_config_file
from core.domain import FeedbackAction, TaskStatus
from core.domain.labels import outcome_label
from core.domain.records import TaskRecord
from core.errors import ConfigurationError, EvidenceDeskError, RefusedAction, StoreError
from core.inputs import load_toml_file, read_input_text
from core.version import app_version

EXIT_OK, EXIT_USAGE, EXIT_REFUSED, EXIT_INPUT = 0, 2, 3, 4


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit code 2
        print(f"{self.prog}: usage error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--db", metavar="URL", help="workspace database (file path or SQLAlchemy URL)")
    common.add_argument("--script", metavar="FILE", help="scripted-provider script for scripted/* models")
    common.add_argument("--corpus", metavar="DIR", help="documents folder the agent searches")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    parser = _Parser(prog="evidence-desk", description="Review LLM answers against their evidence.")
    parser.add_argument("--version", action="version", version=f"evidence-desk {app_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("run", parents=[common], help="run a task to its resting status")
    p.add_argument("text", help="the task")
    p.add_argument("--team", metavar="FILE|auto", help="team template file, or 'auto' for a planned team")
    p.add_argument("--output-schema", metavar="FILE", help="JSON schema the final answer must satisfy")
    p.add_argument("--title", help="short title shown in the queue")

    p = sub.add_parser("list", parents=[common], help="list tasks")
    p.add_argument("--status", action="append", choices=[s.value for s in TaskStatus], default=[])

    p = sub.add_parser("show", parents=[common], help="everything an auditor needs about a task")
    p.add_argument("task_id")
    p.add_argument(
        "--redact", action="store_true", help="mask secrets as an export does (for output you will share)"
    )

    p = sub.add_parser("feedback", parents=[common], help="record the analyst's decision")
    p.add_argument("task_id")
    p.add_argument("action", choices=[a.value for a in FeedbackAction])
    p.add_argument("--prompt", help="what to change (revise)")
    p.add_argument("--note", help="a note kept with the decision")
    p.add_argument("--version", dest="expected_version", type=int, help="task version you reviewed")
    p.add_argument("--no-run", action="store_true", help="revise: record only, do not start the new attempt")
    add_take_over(p)

    p = sub.add_parser("recover", parents=[common], help="recover tasks interrupted by a crashed process")

    p = sub.add_parser("demo", parents=[common], help="build the demo workspace by running the real pipeline")

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
    from core.cli_claims import add_claim_commands
    from core.cli_export import add_export_commands  # decisions
    from core.cli_insight import add_insight_commands  # diff, override, calibration
    from core.cli_review import add_review_commands
    from core.cli_search import add_search_commands  # search, saved views
    from core.cli_team import add_team_commands  # worker, batch, batches, schedule

    _COMMANDS.update(add_review_commands(sub, common) | add_team_commands(sub, common))
    _COMMANDS.update(add_claim_commands(sub, common, cmd_list) | add_insight_commands(sub, common))
    _COMMANDS.update(add_search_commands(sub, common))
    _COMMANDS.update(add_export_commands(sub, common))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    handler = _COMMANDS[args.command]
    _log_in_one_line()
    try:
        _check_config_file()
        settings = load_settings(db_url=args.db, script=args.script, corpus=args.corpus)
        if settings.rules is not None:  # read on every validation later; refuse a bad one now
            read_input_text(settings.rules, what="rules file")
        return asyncio.run(handler(args, settings))
    except RefusedAction as exc:
        print(f"evidence-desk: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except (ConfigurationError, StoreError) as exc:
        print(f"evidence-desk: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except EvidenceDeskError as exc:
        print(f"evidence-desk: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("evidence-desk: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `evidence-desk list | head`: the reader left; nothing to report
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:  # a bug: still one line, with the way to get the details
        if os.environ.get("EVIDENCE_DESK_DEBUG"):
            raise
        known = _environment_failure(exc, args.db)
        if known is not None:
            print(f"evidence-desk: {known}", file=sys.stderr)
            return EXIT_INPUT
        detail = " ".join(str(exc).split())  # one line even for multi-line messages (pydantic's)
        print(
            f"evidence-desk: internal error: {type(exc).__name__}: {detail} (set EVIDENCE_DESK_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1


def _environment_failure(exc: Exception, db: str | None) -> str | None:
    """One line for a failure of the machine rather than of the program: a database or file error.

    The store maps the errors it meets opening and writing; this catches any that escape on
    other paths (the event writer's thread, a read), so SQL and its parameters never reach stderr.
    """
    if "sqlalchemy" in sys.modules:
        from sqlalchemy.exc import DBAPIError

        if isinstance(exc, DBAPIError):
            from core.config import default_db_url
            from core.store.engine import describe_db_error, normalise_url

            return describe_db_error(exc, normalise_url(db) if db else default_db_url())
    if isinstance(exc, OSError) and exc.strerror:
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot use{where}: {exc.strerror}"
    return None


class _OneLineLog(logging.Formatter):
    """Warnings reach the terminal as one line each: the message, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        lines = record.getMessage().splitlines() or [""]
        return f"evidence-desk: {record.levelname.lower()}: {lines[0]}"


def _log_in_one_line() -> None:
    root = logging.getLogger()
    if root.handlers:  # someone (a test harness, an embedding program) already decided
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineLog())
    handler.setLevel(logging.WARNING)
    root.addHandler(handler)


def _check_config_file() -> None:
    """The settings file passes the input limits before pydantic-settings parses it."""
    path = user_config_file()
    if path.exists() or path.is_symlink():  # absent is fine (defaults); a FIFO or folder is not
        load_toml_file(path, what="configuration file")


# ---------------------------------------------------------------------- commands
async def _with_workspace(
    settings: Settings, body: Callable[[Any], Awaitable[int]], *, recover: bool = True
) -> int:
    from core.secrets import load_api_keys_into_env
    from core.tasks.recovery import recover_interrupted
    from core.workspace import Workspace

    await asyncio.to_thread(load_api_keys_into_env)  # for the models, and for export redaction
    ws = await Workspace.open(settings)
    try:
        if recover:
            await recover_interrupted(ws)
        return await body(ws)
    finally:
        await ws.close()


async def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.service import TaskService

    schema = _read_schema(Path(args.output_schema)) if args.output_schema else None

    async def body(ws: Any) -> int:
        service = TaskService(ws)
        task = await service.create(args.text, team=args.team, output_schema=schema, title=args.title)
        if not args.json:
            print(f"task {task.id} created; running...", file=sys.stderr)
        task = await service.run(task.id)
        outcome = await run_outcome(ws.store, task)
        await _print_task_summary(ws, task, args.json, extra=outcome)
        if outcome["error"] is not None:
            print(f"evidence-desk: task {task.id} failed: {outcome['error']}", file=sys.stderr)
            return EXIT_TASK_FAILED
        return EXIT_OK

    return await _with_workspace(settings, body)


async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.review import read_only_reason

    async def body(ws: Any) -> int:
        statuses = [TaskStatus(s) for s in args.status] or None
        tasks = await ws.store.list_tasks(statuses=statuses)
        if args.json:
            _emit([_task_json(t) for t in tasks])
            return EXIT_OK
        for t in tasks:
            score = f"{t.latest_score:.2f}" if t.latest_score is not None else "  - "
            outcome = t.validation_outcome.value if t.validation_outcome else "-"
            marker = f"  [{read_only_reason(t)}]" if t.read_only else ""
            print(
                f"{t.id[:12]}  {t.status.value:<17} {outcome:<14} {score}  v{t.version:<3} {t.title}{marker}"
            )
        return EXIT_OK

    return await _with_workspace(settings, body)


async def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    async def body(ws: Any) -> int:
        # Plain text streams big evidence from the chunk store; JSON and redaction need it whole.
        streaming = not (args.json or args.redact)
        data = await task_dossier(ws.store, args.task_id, resolve=not streaming)
        if args.redact:
            from core.bundle.redact import Redactor

            redactor = await asyncio.to_thread(Redactor.build)
            data = redactor.value(data, "show")
        if args.json:
            _emit(data)
        else:
            await _print_dossier(data, ws.store)
        return EXIT_OK

    return await _with_workspace(settings, body)


async def cmd_feedback(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.claim_guard import decision_claim
    from core.tasks.review import ReviewService, reviewer_name
    from core.tasks.service import TaskService

    action = FeedbackAction(args.action)
    if action is FeedbackAction.REVISE and not args.prompt:
        print("evidence-desk: usage error: revise needs --prompt TEXT", file=sys.stderr)
        return EXIT_USAGE

    async def body(ws: Any) -> int:
        service = TaskService(ws)
        review = ReviewService(service)
        task = await ws.store.get_task(args.task_id)
        expected = args.expected_version if args.expected_version is not None else task.version
        async with decision_claim(
            ws.store, task.id, reviewer_name(settings.reviewer), take_over=args.take_over
        ):
            task = await review.feedback(
                task.id, action, expected_version=expected, prompt=args.prompt, note=args.note
            )
        if action is FeedbackAction.REVISE and not args.no_run:
            task = await service.run(task.id)
        await _print_task_summary(ws, task, args.json)
        return EXIT_OK

    return await _with_workspace(settings, body)


async def cmd_recover(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.recovery import recover_interrupted

    async def body(ws: Any) -> int:
        recovered = await recover_interrupted(ws)
        if args.json:
            _emit([_task_json(t) for t in recovered])
        else:
            for t in recovered:
                print(f"{t.id[:12]}  recovered -> {t.status.value}")
        return EXIT_OK

    return await _with_workspace(settings, body, recover=False)


async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from core.demo import build_demo_workspace

    async def body(ws: Any) -> int:
        def progress(task: TaskRecord) -> None:
            if not args.json:
                print(f"{task.id[:12]}  {task.status.value:<17} {task.title}", file=sys.stderr)

        tasks = await build_demo_workspace(ws, on_task=progress)
        if args.json:
            _emit([_task_json(t) for t in tasks])
        else:
            print(f"demo workspace ready in {ws.store.display_name}: {len(tasks)} tasks")
        return EXIT_OK

    return await _with_workspace(settings, body)


async def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle import export_bundle
    from core.bundle.paths import scrub_for_settings
    from core.bundle.signing import workspace_signing_key

    async def body(ws: Any) -> int:
        key = await asyncio.to_thread(workspace_signing_key, settings.db_url)
        summary = await export_bundle(
            ws.store,
            args.task_ids,
            Path(args.output),
            redact=args.redact,
            signing_key=key,
            scrub=scrub_for_settings(settings, include_paths=args.include_paths),
        )
        if args.json:
            _emit(
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

    return await _with_workspace(settings, body, recover=False)


async def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle import verify_bundle
    from core.bundle.signing import known_fingerprints

    known = await asyncio.to_thread(known_fingerprints, settings.db_url)
    report = await asyncio.to_thread(verify_bundle, Path(args.bundle), known_keys=known)
    if args.json:
        _emit(
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

    async def body(ws: Any) -> int:
        known = await asyncio.to_thread(known_fingerprints, settings.db_url)
        summary = await import_bundle(ws.store, Path(args.bundle), known_keys=known, trust=args.trust)
        if args.json:
            _emit(
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

    return await _with_workspace(settings, body, recover=False)


async def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from core.bundle import open_bundle, write_report, write_report_from_bundle

    out = Path(args.output)
    if args.bundle:
        opened = await asyncio.to_thread(open_bundle, Path(args.bundle))
        written = await write_report_from_bundle(opened, args.task_id, out, redact=args.redact)
    else:

        async def body(ws: Any) -> int:
            from core.bundle.paths import scrub_for_settings

            scrub = scrub_for_settings(settings, include_paths=args.include_paths)
            await write_report(ws.store, args.task_id, out, redact=args.redact, scrub=scrub)
            return EXIT_OK

        await _with_workspace(settings, body, recover=False)
        written = out
    if args.json:
        _emit({"path": str(written)})
    else:
        print(f"wrote {written}")
    return EXIT_OK


_COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]] = {
    "demo": cmd_demo,
    "export": cmd_export,
    "verify": cmd_verify,
    "import": cmd_import,
    "report": cmd_report,
    "run": cmd_run,
    "list": cmd_list,
    "show": cmd_show,
    "feedback": cmd_feedback,
    "recover": cmd_recover,
}


# ---------------------------------------------------------------------- output
def _read_schema(path: Path) -> dict[str, Any]:
    """The output schema, read and checked (refs included) before the workspace is even opened."""
    from core.inputs import load_json_file
    from core.tasks.service import check_output_schema

    data = load_json_file(path, what="output schema")
    if not isinstance(data, dict):
        raise ConfigurationError(f"output schema {path}: a JSON schema must be an object")
    check_output_schema(data)
    return data


def _emit(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def _task_json(t: TaskRecord) -> dict[str, Any]:
    return {
        "id": t.id,
        "title": t.title,
        "status": t.status.value,
        "validation_outcome": t.validation_outcome.value if t.validation_outcome else None,
        "score": t.latest_score,
        "category": t.latest_category,
        "attempts": t.attempt_count,
        "version": t.version,
        "read_only": t.read_only,
        "updated_at": t.updated_at.isoformat(),
    }


async def _print_task_summary(
    ws: Any, task: TaskRecord, as_json: bool, extra: dict[str, Any] | None = None
) -> None:
    attempts = await ws.store.list_attempts(task.id, resolve=False)
    rows = [
        {
            "index": a.index,
            "trigger": a.trigger,
            "state": a.state.value,
            "finish_reason": a.finish_reason,
            "validation_status": a.validation_status,
            "validation_score": a.validation_score,
            "validation_outcome": a.validation_outcome.value if a.validation_outcome else None,
        }
        for a in attempts
    ]
    if as_json:
        _emit({**_task_json(task), "text": task.text, "attempts": rows, **(extra or {})})
        return
    outcome = outcome_label(task.validation_outcome, task.latest_validation_status)
    print(f"task {task.id}  status {task.status.value}  outcome {outcome}  version {task.version}")
    for r in rows:
        score = f"{r['validation_score']:.2f}" if r["validation_score"] is not None else "-"
        print(
            f"  attempt {r['index']} ({r['trigger']}): {r['state']}, finish {r['finish_reason']}, "
            f"validation {r['validation_status'] or '-'} score {score}, "
            f"outcome {outcome_label(r['validation_outcome'], r['validation_status'])}"
        )


async def task_dossier(store: Any, task_id: str, *, resolve: bool = True) -> dict[str, Any]:
    """Everything stored about a task, as plain JSON-ready data (``show`` and audits)."""
    from core.tasks.dossier import load_dossier
    from core.tasks.override import dossier_overrides

    d = await load_dossier(store, task_id, resolve=resolve)
    data = d.model_dump(mode="json")
    data["task"] = {
        **_task_json(d.task),
        "text": d.task.text,
        "team": d.task.team_spec,
        "output_schema": d.task.output_schema,
        "origin": d.task.origin,
    }
    data["usage"] = d.usage().model_dump()
    data["analyst_verdicts"] = [v.model_dump(mode="json") for v in dossier_overrides(d).values()]
    per_attempt = d.attempt_usage()
    for a in data["attempts"]:
        a["usage"] = per_attempt[a["index"]].model_dump()
    return data


if __name__ == "__main__":  # `python -m core.cli`: the command line without the desk's entry point
    raise SystemExit(main())
