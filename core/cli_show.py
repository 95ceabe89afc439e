"""``show``'s plain-text printing of a task dossier, moved out of ``core/cli.py`` to keep it small."""

from __future__ import annotations

import json
import sys
from typing import Any

from core.domain.evidence import ToolEvidence
from core.domain.labels import outcome_label
from core.domain.usage import UsageTotals
from core.evidence.content import ContentReader, iter_item_text


async def _print_tool(tool: dict[str, Any], store: ContentReader | None) -> None:
    """A tool result's text, streamed chunk by chunk when it is in the chunk store."""
    flag = " ERROR" if tool.get("is_error") else ""
    print(f"\n### Tool result {tool['tool_name']} ({tool.get('tool_call_id')}){flag}")
    if store is None or not tool.get("content_ref"):
        print(tool["content"])
        return
    async for piece in iter_item_text(store, ToolEvidence.model_validate(tool)):
        sys.stdout.write(piece)
    sys.stdout.write("\n")


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


__all__ = ["print_dossier"]
