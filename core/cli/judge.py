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
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli.common import EXIT_FAILURE, EXIT_OK, Handler, Subparsers, emit, parse_day, with_workspace
from core.config import Settings
from core.errors import InvalidRequest

if TYPE_CHECKING:
    from core.judge.candidates import Candidate
    from core.judge.replay import ReplayProgress, ReplaySelection
    from core.judge.replay_queue import ReplayState
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
    p.add_argument(
        "--wait",
        action="store_true",
        help="queued for the workers (PostgreSQL): follow the replay until no job of it is left",
    )
    p = sub.add_parser(
        "compare-validators",
        parents=[common],
        help="two validators against the analysts: agreement, McNemar's test, differing cases",
    )
    p.add_argument("current", metavar="CURRENT", help="'live', a candidate name or a validator version")
    p.add_argument("candidate", metavar="CANDIDATE", help="a candidate name or a validator version")
    p = sub.add_parser(
        "promote-validator",
        parents=[common],
        help="make a replayed candidate the workspace's validator ('configured': back to the settings')",
    )
    p.add_argument("name", metavar="NAME")
    p = sub.add_parser(
        "export-dataset",
        parents=[common],
        help="decided tasks as a labelled dataset (JSONL, Inspect, promptfoo)",
    )
    p.add_argument("--format", choices=["jsonl", "inspect", "promptfoo"], default="jsonl")
    p.add_argument("-o", "--output", required=True, metavar="FILE")
    p.add_argument("--inline", action="store_true", help="the evidence text itself, not references to it")
    p.add_argument("--since", metavar="YYYY-MM-DD", help="tasks decided on or after this day (UTC)")
    p.add_argument("--until", metavar="YYYY-MM-DD", help="tasks decided before this day (UTC)")
    p.add_argument("--batch", metavar="ID", help="only tasks queued by this batch")
    p.add_argument("--task", nargs="+", metavar="ID", help="only these tasks")
    p.add_argument(
        "--decision",
        action="append",
        choices=["satisfied", "revise", "abandon", "overridden"],
        help="only tasks whose first decision was this (repeatable)",
    )
    p.add_argument(
        "--redact", action="append", default=[], metavar="PATTERN", help="regex to mask (repeatable)"
    )
    _register_prompts(sub, common)
    return {
        "revalidate": cmd_revalidate,
        "compare-validators": cmd_compare,
        "validator-prompt": cmd_prompt,
        "promote-validator": cmd_promote,
        "export-dataset": cmd_export_dataset,
    }


def _register_prompts(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "validator-prompt", parents=[common], help="the workspace's own validator templates (versioned)"
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    verbs.add_parser(
        "list", parents=[common], help="each validator template: installed or the workspace's version"
    )
    show = verbs.add_parser("show", parents=[common], help="a template's text")
    show.add_argument("name")
    show.add_argument("--version", type=int, metavar="N", help="a saved version (default: the current one)")
    show.add_argument("--installed", action="store_true", help="the installed template")
    edit = verbs.add_parser(
        "edit", parents=[common], help="save a new version (from --file, else in $EDITOR)"
    )
    edit.add_argument("name")
    edit.add_argument("--file", metavar="FILE", help="the new text")
    edit.add_argument(
        "--reset", action="store_true", help="go back to the installed template (a version too)"
    )
    edit.add_argument("--note", default="", help="why (kept with the version)")
    diff = verbs.add_parser(
        "diff", parents=[common], help="unified diff (default: installed against current)"
    )
    diff.add_argument("name")
    diff.add_argument("--a", type=int, metavar="N", help="the earlier version (0: installed)")
    diff.add_argument("--b", type=int, metavar="M", help="the later version (default: current)")


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
    from core.tasks.dispatch import should_defer

    if args.limit is not None and args.limit < 1:
        raise InvalidRequest("--limit must be at least 1")
    if not 1 <= args.concurrency <= 64:
        raise InvalidRequest("--concurrency must be 1..64")
    since = parse_day(args.since, "--since")

    async def body(ws: Workspace) -> int:
        from core.validation.workspace_templates import workspace_templates

        candidate = load_candidate(settings, args.candidate, await workspace_templates(ws.store))
        selection = ReplaySelection(await _task_ids(ws, args.tasks), since, args.batch, args.limit)
        if await should_defer(ws):
            return await _revalidate_on_workers(ws, candidate, selection, args)
        summary = await revalidate(
            ws, candidate, selection, concurrency=args.concurrency, on_progress=_progress_printer(args.json)
        )
        if summary.not_decided and not args.json:
            print(
                f"revalidate: not decided, nothing to compare with: {', '.join(summary.not_decided)}",
                file=sys.stderr,
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


async def _revalidate_on_workers(
    ws: Workspace, candidate: Candidate, selection: ReplaySelection, args: argparse.Namespace
) -> int:
    """Queue one job per attempt left to judge; with --wait, follow them (failed jobs, or
    attempts left without a verdict: exit 1)."""
    from core.judge.replay_queue import queue_replay, wait_for_replay

    queued = await queue_replay(ws, candidate, selection)
    if queued.not_decided and not args.json:
        print(
            f"revalidate: not decided, nothing to compare with: {', '.join(queued.not_decided)}",
            file=sys.stderr,
        )
    if not args.wait:
        if args.json:
            emit(queued.as_json())
        else:
            print(
                f"candidate {queued.candidate} (validator {queued.validator_version}): {queued.queued} verdict "
                f"job(s) queued for the team's workers ({queued.already_queued} queued before, "
                f"{queued.already_done} judged before, of {queued.selected} decided attempts); "
                "add --wait to follow them"
            )
        return EXIT_OK

    def show(state: ReplayState) -> None:
        print(state.line(), file=sys.stderr)

    state = await wait_for_replay(ws.store, queued, show)
    if args.json:
        emit({**queued.as_json(), "judged": state.judged, "failed": state.failed, "unjudged": state.unjudged})
    else:
        print(
            f"candidate {queued.candidate} (validator {queued.validator_version}): {state.judged} of "
            f"{queued.selected} decided attempts judged on the workers, {state.failed} failed"
            + (f", {state.unjudged} without a verdict (skipped or no job)" if state.unjudged else "")
        )
    return EXIT_FAILURE if state.failed or state.unjudged else EXIT_OK


async def cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    from core.judge.compare import compare_validators, format_comparison

    async def body(ws: Workspace) -> int:
        from core.validation.workspace_templates import workspace_templates

        base = await workspace_templates(ws.store)
        comparison = await compare_validators(ws.store, settings, args.current, args.candidate, base)
        if args.json:
            emit(comparison.as_json())
        else:
            print(format_comparison(comparison))
        return EXIT_OK

    return await with_workspace(settings, body)


def _edit_in_editor(text: str) -> str:
    """The text after the user's $EDITOR (or vi) saved it: blocking, run in a thread."""
    import os
    import shlex
    import subprocess
    import tempfile
    from pathlib import Path

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "template.md.j2"
        path.write_text(text, encoding="utf-8")
        if subprocess.run([*shlex.split(editor), str(path)], check=False).returncode != 0:
            raise InvalidRequest(f"{editor} exited with an error: nothing saved")
        return path.read_text(encoding="utf-8")


async def cmd_prompt(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    from core.cli.common import reviewer
    from core.inputs import read_input_text
    from core.validation import workspace_templates as wt
    from core.validation.identity import validator_identity
    from core.validation.prompt import template_digests, validator_template_names

    async def body(ws: Workspace) -> int:
        store = ws.store
        if args.verb == "list":
            latest = {v.name: v for v in await wt.template_history(store)}
            installed = template_digests()
            rows = []
            for name in validator_template_names():
                v = latest.get(name)
                own = v is not None and not v.removed
                rows.append(
                    {
                        "name": name,
                        "source": "workspace" if own else "installed",
                        "version": v.version if v else None,
                        "sha256": (v.sha256 if own and v else installed[name]),
                        "saved_by": v.reviewer if v else None,
                        "saved_at": v.saved_at.isoformat() if v else None,
                    }
                )
            version = validator_identity(settings, await wt.workspace_templates(store)).version
            if args.json:
                emit({"templates": rows, "validator_version": version})
            else:
                for r in rows:
                    where = f"workspace v{r['version']}" if r["source"] == "workspace" else "installed"
                    print(f"{r['name']}: {where} sha256 {str(r['sha256'])[:12]}")
                print(f"validator version: {version}")
            return EXIT_OK
        if args.verb == "show":
            print(await wt.template_text(store, args.name, args.version, installed=args.installed), end="")
            return EXIT_OK
        if args.verb == "diff":
            print(await wt.template_diff(store, args.name, args.a, args.b), end="")
            return EXIT_OK
        if args.reset:
            text = None
        elif args.file:
            text = read_input_text(Path(args.file), what="validator template")
        else:
            text = await asyncio.to_thread(_edit_in_editor, await wt.template_text(store, args.name))
        saved = await wt.save_template(
            store, args.name, text, reviewer=reviewer(args, settings), note=args.note
        )
        version = validator_identity(settings, await wt.workspace_templates(store)).version
        if args.json:
            emit(
                {
                    "name": saved.name,
                    "version": saved.version,
                    "sha256": saved.sha256,
                    "validator_version": version,
                }
            )
        else:
            print(f"{saved.name}: saved version {saved.version}; validator version now {version}")
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_promote(args: argparse.Namespace, settings: Settings) -> int:
    from core.cli.common import reviewer
    from core.judge.promote import promote
    from core.validation.workspace_templates import workspace_templates

    async def body(ws: Workspace) -> int:
        base = await workspace_templates(ws.store)
        done = await promote(ws.store, settings, args.name, reviewer=reviewer(args, settings), base=base)
        if args.json:
            emit(done.model_dump(mode="json"))
        else:
            print(
                f"{done.candidate} (validator {done.validator_version}) is now the workspace's validator; "
                f"it was {done.previous_version}"
            )
        return EXIT_OK

    return await with_workspace(settings, body)


async def cmd_export_dataset(args: argparse.Namespace, settings: Settings) -> int:
    from core.judge.dataset import DatasetFilter, write_dataset

    since, until = parse_day(args.since, "--since"), parse_day(args.until, "--until")

    async def body(ws: Workspace) -> int:
        tasks = [(await ws.store.get_task(t)).id for t in args.task] if args.task else None
        flt = DatasetFilter(since, until, args.batch, tasks, args.decision)
        done = await write_dataset(
            ws.store, Path(args.output), args.format, flt, inline=args.inline, redact=args.redact
        )
        if args.json:
            emit({"path": str(done.path), "records": done.records, "format": done.format})
        else:
            print(f"{done.records} decided task(s) written to {done.path} ({done.format})")
        return EXIT_OK

    return await with_workspace(settings, body)
