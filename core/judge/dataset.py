"""Datasets out: decided tasks as labelled examples for evaluation tools.

One record per decided task, built around the first attempt an analyst decided (the one a
validator was judged on): the task's text, that attempt's answer, its evidence (references, or
the text itself with ``inline``), every validator verdict of the task, the analyst's decision on
it (and reason codes when decisions carry them), and, when the analyst asked for a revision and
later accepted another attempt, that attempt's answer as the corrected one.

Three shapes of the same records: ``jsonl`` (ours, every field), ``inspect`` (Inspect AI's JSON
dataset: one ``Sample`` a line, the analyst's verdict as ``target``) and ``promptfoo`` (one
promptfoo test case a line, for ``tests: file://FILE``, asserting the judge's JSON verdict
matches the analyst's). The file is written whole or not at all (a temporary file renamed over
it) and passes the same path scrubbing and secret masking as bundles.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from core.bundle.paths import machine_scrub
from core.bundle.redact import Redactor
from core.domain.evidence import TaskEvidencePacket
from core.evidence.content import index_packet, item_length, item_text
from core.evidence.render import render_task
from core.exports.progress import ProgressSink, Step, replacing
from core.judge.compare import analyst_endorsed
from core.store import Store
from core.store.judge_sql import DecidedAttempt, decided_attempts

__all__ = ["DatasetFilter", "DatasetFormat", "DatasetSummary", "write_dataset"]


class DatasetFormat(StrEnum):
    JSONL = "jsonl"
    INSPECT = "inspect"
    PROMPTFOO = "promptfoo"


@dataclass(frozen=True, slots=True)
class DatasetFilter:
    since: datetime | None = None
    until: datetime | None = None
    batch_id: str | None = None
    task_ids: Sequence[str] | None = None
    decisions: Sequence[str] | None = None  # satisfied, revise, abandon, overridden


@dataclass(frozen=True, slots=True)
class DatasetSummary:
    path: Path
    records: int
    format: str


def _first_decided_per_task(decided: list[DecidedAttempt]) -> dict[str, list[DecidedAttempt]]:
    per_task: dict[str, list[DecidedAttempt]] = {}
    for d in sorted(decided, key=lambda d: (d.attempt_index, d.decided_at)):
        per_task.setdefault(d.task_id, []).append(d)
    return per_task


async def _evidence(store: Store, packet_data: dict[str, Any] | None, inline: bool) -> list[dict[str, Any]]:
    if not packet_data:
        return []
    try:
        packet = await index_packet(store, TaskEvidencePacket.model_validate(packet_data))
    except ValidationError:
        return [{"error": "unreadable evidence packet"}]
    rendered = await asyncio.to_thread(render_task, [packet])
    out = []
    for item in rendered.items:
        ref: dict[str, Any] = {
            "id": item.evidence_id,
            "kind": str(item.kind),
            "source": item.source,
            "tool": item.tool_name,
            "title": item.title,
            "url": item.url,
            "chars": item_length(item),
        }
        if item.content_ref is not None:
            ref["sha256"] = item.content_ref.sha256
        if inline:
            ref["content"] = await item_text(store, item)
        out.append(ref)
    return out


async def _record(store: Store, decided: list[DecidedAttempt], inline: bool) -> dict[str, Any]:
    first = decided[0]
    task = await store.get_task(first.task_id)
    attempts = {a.id: a for a in await store.list_attempts(task.id, resolve=False)}
    attempt = attempts[first.attempt_id]
    feedback = [f for f in await store.list_feedback(task.id) if f.attempt_id == first.attempt_id]
    last = feedback[-1] if feedback else None
    corrected = None
    if first.decision == "revise":
        later = [d for d in decided[1:] if analyst_endorsed(d)]
        if later:
            corrected = attempts[later[-1].attempt_id].final_output
    verdicts = [
        {
            "attempt_index": v.attempt_index,
            "status": v.status,
            "score": v.score,
            "category": v.category,
            "issues": v.result.get("issues", []),
            "validator_model": v.debug.get("validator_model"),
            "validator_version": v.debug.get("validator_version"),
        }
        for v in await store.list_validations(task.id)
    ]
    return {
        "task_id": task.id,
        "title": task.title,
        "input": task.text,
        "attempt_index": first.attempt_index,
        "answer": attempt.final_output or "",
        "evidence": await _evidence(store, attempt.packet, inline),
        "validator_verdicts": verdicts,
        "analyst": {
            "decision": first.decision,
            "endorsed": analyst_endorsed(first),
            "override_status": first.override_status,
            "reviewer": last.reviewer if last else None,
            "note": last.note if last else None,
            "reason_codes": list(getattr(last, "reason_codes", None) or []),
            "decided_at": first.decided_at.isoformat(),
        },
        "corrected_answer": corrected,
    }


def _evidence_text(record: dict[str, Any]) -> str:
    lines = []
    for e in record["evidence"]:
        head = f"[{e.get('id')}] {e.get('kind')}: {e.get('source')}"
        lines.append(f"{head}\n{e['content']}" if "content" in e else f"{head} ({e.get('chars')} characters)")
    return "\n\n".join(lines) or "(no evidence)"


def _shaped(record: dict[str, Any], fmt: DatasetFormat) -> dict[str, Any]:
    label = "accepted" if record["analyst"]["endorsed"] else "rejected"
    meta = {k: v for k, v in record.items() if k not in ("input", "answer", "evidence")}
    if fmt is DatasetFormat.INSPECT:
        prompt = (
            f"Task:\n{record['input']}\n\nAnswer:\n{record['answer']}\n\nEvidence:\n{_evidence_text(record)}"
        )
        return {
            "id": record["task_id"],
            "input": [{"role": "user", "content": prompt}],
            "target": label,
            "metadata": meta,
        }
    if fmt is DatasetFormat.PROMPTFOO:
        check = f"JSON.parse(output).status === {json.dumps(label)}"
        return {
            "description": f"{record['title']} ({record['task_id']})",
            "vars": {"task": record["input"], "answer": record["answer"], "evidence": _evidence_text(record)},
            "assert": [{"type": "is-json"}, {"type": "javascript", "value": check}],
            "metadata": meta,
        }
    return record


async def _write(
    store: Store,
    fh: IO[str],
    fmt: DatasetFormat,
    flt: DatasetFilter,
    inline: bool,
    redact: Sequence[str],
    progress: ProgressSink | None,
) -> int:
    decided = await decided_attempts(store, since=flt.since, batch_id=flt.batch_id, task_ids=flt.task_ids)
    if flt.until is not None:
        decided = [d for d in decided if d.decided_at < flt.until]
    per_task = _first_decided_per_task(decided)
    if flt.decisions is not None:
        per_task = {k: v for k, v in per_task.items() if v[0].decision in flt.decisions}
    scrub = machine_scrub()
    redactor = await asyncio.to_thread(Redactor.build, redact, None)
    for done, (_, attempts) in enumerate(sorted(per_task.items(), key=lambda kv: kv[1][0].decided_at)):
        record = await _record(store, attempts, inline)
        clean = redactor.value(scrub.value(_shaped(record, fmt)), "dataset")
        fh.write(json.dumps(clean, ensure_ascii=False) + "\n")
        if progress is not None:
            progress(Step(done + 1, len(per_task), record["title"]))
    return len(per_task)


async def write_dataset(
    store: Store,
    out: Path,
    fmt: DatasetFormat | str = DatasetFormat.JSONL,
    flt: DatasetFilter | None = None,
    *,
    inline: bool = False,
    redact: Sequence[str] = (),
    progress: ProgressSink | None = None,
) -> DatasetSummary:
    """Write the dataset; on any failure no file is left behind and an existing one is untouched."""
    fmt = DatasetFormat(fmt)
    with replacing(Path(out)) as fh:
        n = await _write(store, fh, fmt, flt or DatasetFilter(), inline, redact, progress)
    return DatasetSummary(Path(out), n, str(fmt))
