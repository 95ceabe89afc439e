"""Commands that look at tasks: ``list`` (the whole workspace, or one reviewer's claims) and
``show`` (everything an auditor needs about one task).

``show`` prints big evidence chunk by chunk from the chunk store, so memory stays bounded by a
chunk however large a tool result was; ``--json`` and ``--redact`` need the whole text and read it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from core.cli.common import (
    EXIT_OK,
    Handler,
    Subparsers,
    claim_json,
    emit,
    reviewer,
    task_json,
    with_workspace,
)
from core.config import Settings
from core.domain import TaskStatus
from core.domain.evidence import ToolEvidence
from core.domain.labels import outcome_label
from core.domain.usage import UsageTotals
from core.evidence.content import ContentReader, iter_item_text
from core.evidence.injection import injection_signs, injection_warning
from core.validation.warnings import read_warnings

if TYPE_CHECKING:
    from core.workspace import Workspace


def register(sub: Subparsers, common: argparse.ArgumentParser) -> dict[str, Handler]:
    p = sub.add_parser("list", parents=[common], help="list tasks")
    p.add_argument("--status", action="append", choices=[s.value for s in TaskStatus], default=[])
    mine = p.add_mutually_exclusive_group()
    mine.add_argument("--assigned-to-me", action="store_true", help="only tasks you have claimed")
    mine.add_argument("--reviewer", help="only tasks this reviewer has claimed")

    p = sub.add_parser("show", parents=[common], help="everything an auditor needs about a task")
    p.add_argument("task_id")
    p.add_argument(
        "--redact", action="store_true", help="mask secrets as an export does (for output you will share)"
    )
    return {"list": cmd_list, "show": cmd_show}


async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    if args.assigned_to_me or args.reviewer:
        return await _list_claimed(args, settings)
    from core.tasks.policy import read_only_reason

    async def body(ws: Workspace) -> int:
        statuses = [TaskStatus(s) for s in args.status] or None
        tasks = await ws.store.list_tasks(statuses=statuses)
        if args.json:
            emit([task_json(t) for t in tasks])
            return EXIT_OK
        # The outcome in the words every reader uses (never the stored "force_accepted", which reads
        # as an endorsement); the id stays the first field and the title the last, for scripts.
        print(f"{'ID':<12}  {'STATUS':<17} {'OUTCOME':<35} {'SCORE':<5} {'VER':<4} TITLE")
        for t in tasks:
            score = f"{t.latest_score:.2f}" if t.latest_score is not None else "  - "
            outcome = outcome_label(t.validation_outcome, t.latest_validation_status)
            marker = f"  [{read_only_reason(t)}]" if t.read_only else ""
            print(
                f"{t.id[:12]}  {t.status.value:<17} {outcome:<35} {score:<5} v{t.version:<3} {t.title}{marker}"
            )
        return EXIT_OK

    return await with_workspace(settings, body)


async def _list_claimed(args: argparse.Namespace, settings: Settings) -> int:
    """One reviewer's queue: the tasks they hold, with their lease."""
    from core.tasks.claims import Claims

    async def body(ws: Workspace) -> int:
        who = reviewer(args, settings)
        statuses = {TaskStatus(s) for s in args.status}
        rows = []
        for claim in await Claims(ws.store).assigned(who):
            task = await ws.store.get_task(claim.task_id)
            if not statuses or task.status in statuses:
                rows.append((task, claim))
        if args.json:
            emit([{**task_json(t), "claim": claim_json(c)} for t, c in rows])
            return EXIT_OK
        for t, c in rows:
            print(f"{t.id[:12]}  {t.status.value:<17} v{t.version:<3} {t.title}  [{c.describe()}]")
        return EXIT_OK

    return await with_workspace(settings, body, recover=False)


async def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    from core.tasks.dossier_json import task_dossier

    async def body(ws: Workspace) -> int:
        # Plain text streams big evidence from the chunk store; JSON and redaction need it whole.
        streaming = not (args.json or args.redact)
        data = await task_dossier(ws.store, args.task_id, resolve=not streaming)
        if args.redact:
            from core.bundle.redact import Redactor

            redactor = await asyncio.to_thread(Redactor.build)
            data = redactor.value(data, "show")
        if args.json:
            emit(data)
        else:
            await print_dossier(data, ws.store)
        return EXIT_OK

    return await with_workspace(settings, body)


async def _print_tool(tool: dict[str, Any], store: ContentReader | None) -> None:
    """A tool result's text, streamed chunk by chunk when it is in the chunk store."""
    flag = " ERROR" if tool.get("is_error") else ""
    print(f"\n### Tool result {tool['tool_name']} ({tool.get('tool_call_id')}){flag}")
    if store is None or not tool.get("content_ref"):
        warning = injection_warning(f"{tool.get('title') or ''}\n{tool['content']}")
        if warning is not None:
            print(warning)
        print(tool["content"])
        return
    signs: set[str] = set()
    async for piece in iter_item_text(store, ToolEvidence.model_validate(tool)):
        signs.update(injection_signs(piece))
        sys.stdout.write(piece)
    sys.stdout.write("\n")
    if signs:  # a streamed result is flagged after it: its text is never held whole
        print(f"evidence warning: possible prompt injection ({', '.join(sorted(signs))}) in the result above")


async def print_dossier(data: dict[str, Any], store: ContentReader | None = None) -> None:
    """Print a dossier; with ``store``, chunked evidence (``resolve=False``) is streamed from it."""
    t = data["task"]
    print(f"# Task {t['id']}\n{t['text']}\n")
    shown = outcome_label(t["validation_outcome"], t.get("latest_validation_status"))
    print(f"status {t['status']} · outcome {shown} · version {t['version']}")
    print(f"usage {UsageTotals.model_validate(data['usage']).summary()}")
    if t["read_only"]:
        print(f"read-only: imported from {t['origin'] or 'a case bundle'}")
    for a in data["attempts"]:
        print(f"\n## Attempt {a['index']} ({a['trigger']}) — {a['state']}, finish {a['finish_reason']}")
        print(f"outcome {outcome_label(a['validation_outcome'], a['validation_status'])}")
        print(f"validation {a['validation_status'] or '-'} score {a['validation_score']}")
        print(f"usage {UsageTotals.model_validate(a['usage']).summary()}")
        print(f"\n### Answer\n{a['final_output'] or '(no usable answer)'}")
        packet = a.get("packet") or {}
        runs: list[dict[str, Any]] = [packet["main_run"]] if packet.get("main_run") else []
        runs += [n["evidence"] for n in packet.get("team_node_results", []) if n.get("evidence")]
        for run in runs:
            for warning in run.get("warnings", []):
                print(f"warning: {warning}")
            for tool in run.get("tool_results", []):
                await _print_tool(tool, store)
        for n in packet.get("team_node_results", []):
            print(
                f"\n### Team node {n['node_id']}: {n['status']} ({n['finish_reason']}) {n.get('error') or ''}"
            )
    for v in data["validations"]:
        print(f"\n## Validation of attempt {v['attempt_index']}: {v['status']} score {v['score']}")
        for warning in read_warnings(v["debug"] or {}):
            print(f"warning: {warning.code.value}: {warning.message}")
        cited = (v.get("result") or {}).get("citations") or []
        if cited:  # numbered as `evidence-desk citation TASK N right|wrong` names them
            print("### Citations")
        for n, c in enumerate(cited, 1):
            print(
                f"{n}. {c.get('evidence_id')} ({c.get('verdict')}, {c.get('check', 'unchecked')}): {c.get('claim')}"
            )
        print(f"### Raw validator response\n{v['raw_response']}")
        print(f"### Debug\n{json.dumps(v['debug'], indent=2, default=str)}")
        if v.get("prompt"):
            print(f"### Rendered validation prompt\n{v['prompt']}")
    for o in data.get("analyst_verdicts", []):
        note = f" — {o['note']}" if o.get("note") else ""
        print(
            f"\n## Analyst verdict on attempt {o['attempt_index']} ({o['reviewer']}, kept beside the validator's)"
        )
        print(f"{o['status']}, category {o['category']}{note}")
    if data["feedback"]:
        print("\n## Feedback history")
        for f in data["feedback"]:
            print(f"- {f['created_at']} {f['reviewer']}: {f['action']} {f['prompt'] or ''} {f['note'] or ''}")
