"""The decisions export: every analyst decision as one row, for a spreadsheet or pandas.

One row per decision (satisfied, revise, abandon, reopen, undo), with the task, the attempt it
was made on, that attempt's validator verdict and the analyst's own verdict on it (if any), so a
team can audit its reviews without opening the desk (Langfuse users ask for exactly this, #9774).
CSV is RFC 4180 through the ``csv`` module (UTF-8, one header row, CRLF), and a text cell that a
spreadsheet would run as a formula (``= + - @``, tab, CR) is prefixed with ``'``; JSONL carries
the same columns with typed values. Reviewer names and notes pass the same path scrubbing and
secret masking as bundles and reports.
"""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from core.bundle.paths import MachineScrub, machine_scrub
from core.bundle.redact import Redactor
from core.domain.facts import EventKind
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.exports.progress import Cancellation, ProgressSink, Step, check, replacing
from core.store import Store
from core.tasks.override import overrides_from_events
from core.terminal import json_safe

COLUMNS = (
    "task_id",
    "title",
    "attempt",
    "validator_status",
    "validator_score",
    "validator_category",
    "analyst_decision",
    "analyst_override_verdict",
    "reviewer",
    "note",
    "reason",
    "decided_at",
    "created_at",
)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class DecisionFormat(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"


@dataclass(frozen=True)
class DecisionFilter:
    """Which decisions to export; every field narrows, None means any."""

    task_ids: Sequence[str] | None = None
    statuses: Sequence[TaskStatus] | None = None  # the task's current status
    reviewer: str | None = None
    since: datetime | None = None  # decided at or after
    until: datetime | None = None  # decided before


@dataclass(frozen=True)
class DecisionsSummary:
    path: Path
    rows: int
    tasks: int


def csv_safe(value: Any) -> Any:
    """Text a spreadsheet would evaluate as a formula is kept as text (OWASP CSV injection)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


async def _tasks(store: Store, flt: DecisionFilter) -> list[TaskRecord]:
    if flt.task_ids is not None:
        found: dict[str, TaskRecord] = {}
        for task_id in flt.task_ids:
            task = await store.get_task(task_id)
            found.setdefault(task.id, task)
        tasks = list(found.values())
        return [t for t in tasks if not flt.statuses or t.status in flt.statuses]
    return await store.list_tasks(statuses=flt.statuses, order_by="created_at", descending=False)


async def task_decisions(
    store: Store, task: TaskRecord, flt: DecisionFilter | None = None
) -> list[dict[str, Any]]:
    """The rows of one task, oldest decision first (unscrubbed, typed)."""
    flt = flt or DecisionFilter()
    feedback = await store.list_feedback(task.id)
    if flt.reviewer is not None:
        feedback = [f for f in feedback if f.reviewer == flt.reviewer]
    if flt.since is not None:
        feedback = [f for f in feedback if f.created_at >= flt.since]
    if flt.until is not None:
        feedback = [f for f in feedback if f.created_at < flt.until]
    if not feedback:
        return []
    validations = await store.list_validations(task.id)
    index_of = {v.attempt_id: v.attempt_index for v in validations}
    if any(f.attempt_id and f.attempt_id not in index_of for f in feedback):  # decided before validation
        index_of.update({a.id: a.index for a in await store.list_attempts(task.id, resolve=False)})
    verdict_of = {v.attempt_index: v for v in validations}  # the last verdict per attempt wins
    overrides = overrides_from_events(
        await store.get_task_events(task.id, kinds=[EventKind.ANALYST_VERDICT_RECORDED], resolve=False)
    )
    rows = []
    for f in feedback:
        attempt = index_of.get(f.attempt_id) if f.attempt_id else None
        verdict = verdict_of.get(attempt) if attempt is not None else None
        override = overrides.get(attempt) if attempt is not None else None
        rows.append(
            {
                "task_id": task.id,
                "title": task.title,
                "attempt": attempt,
                "validator_status": verdict.status if verdict else None,
                "validator_score": verdict.score if verdict else None,
                "validator_category": verdict.category if verdict else None,
                "analyst_decision": f.action,
                "analyst_override_verdict": override.status.value if override else None,
                "reviewer": f.reviewer,
                "note": f.note,
                "reason": f.reason,
                "decided_at": f.created_at.isoformat(),
                "created_at": task.created_at.isoformat(),
            }
        )
    return rows


async def write_decision_rows(
    store: Store,
    fh: IO[str],
    fmt: DecisionFormat | str = DecisionFormat.CSV,
    flt: DecisionFilter | None = None,
    *,
    progress: ProgressSink | None = None,
    cancel: Cancellation | None = None,
    scrub: MachineScrub | None = None,
    redact: Sequence[str] = (),
) -> tuple[int, int]:
    """Write the header and rows to an open text file (``newline=""`` for CSV); (rows, tasks)."""
    fmt = DecisionFormat(fmt)
    flt = flt or DecisionFilter()
    scrub = scrub or machine_scrub()
    redactor = await asyncio.to_thread(Redactor.build, redact, None)
    tasks = await _tasks(store, flt)
    total, rows, with_rows = len(tasks), 0, 0
    writer = csv.DictWriter(fh, fieldnames=COLUMNS) if fmt is DecisionFormat.CSV else None
    if writer is not None:
        writer.writeheader()
    for done, task in enumerate(tasks):
        check(cancel, "decisions export", done, total)
        found = await task_decisions(store, task, flt)
        for row in found:
            clean = redactor.value(scrub.value(row), "decisions")
            if writer is not None:
                writer.writerow({k: csv_safe(v) for k, v in clean.items()})
            else:
                fh.write(json_safe(json.dumps(clean, ensure_ascii=False)) + "\n")
        rows += len(found)
        with_rows += bool(found)
        if progress is not None:
            progress(Step(done + 1, total, task.title))
    return rows, with_rows


async def write_decisions(
    store: Store,
    out: Path,
    fmt: DecisionFormat | str = DecisionFormat.CSV,
    flt: DecisionFilter | None = None,
    *,
    progress: ProgressSink | None = None,
    cancel: Cancellation | None = None,
    scrub: MachineScrub | None = None,
    redact: Sequence[str] = (),
) -> DecisionsSummary:
    """Write the decisions file; cancelled (``ExportCancelled``) or failed, no file is left behind."""
    fmt = DecisionFormat(fmt)
    with replacing(Path(out), newline="" if fmt is DecisionFormat.CSV else None) as fh:
        rows, tasks = await write_decision_rows(
            store, fh, fmt, flt, progress=progress, cancel=cancel, scrub=scrub, redact=redact
        )
    return DecisionsSummary(path=Path(out), rows=rows, tasks=tasks)


__all__ = [
    "COLUMNS",
    "DecisionFilter",
    "DecisionFormat",
    "DecisionsSummary",
    "csv_safe",
    "task_decisions",
    "write_decision_rows",
    "write_decisions",
]
