"""Adding a verified bundle's tasks to a workspace, read-only, all or nothing.

Rows keep their original ids, so importing the same bundle twice finds the tasks already present
and skips them instead of duplicating them. Everything is written in one transaction on the store's
write engine (holding the store's SQLite write lock), so a failure midway leaves nothing behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.bundle.format import BundleError
from core.bundle.opened import OpenedBundle, parse_bundle
from core.bundle.verify import load_bundle
from core.store import Store
from core.store.models import AttemptRow, EventRow, FeedbackRow, RunRow, SessionRow, TaskRow, ValidationRow

__all__ = ["ImportSummary", "import_bundle"]


@dataclass
class ImportSummary:
    bundle_id: str
    imported_task_ids: list[str] = field(default_factory=list)
    skipped_task_ids: list[str] = field(default_factory=list)
    events: int = 0


def _row(record: BaseModel, **overrides: Any) -> dict[str, Any]:
    values = record.model_dump(mode="python")
    values.update(overrides)
    return {k: (v.value if isinstance(v, Enum) else v) for k, v in values.items()}


@asynccontextmanager
async def _transaction(store: Store) -> AsyncIterator[AsyncConnection]:
    # Store exposes no bulk-import method; this mirrors Store._write_conn (narrow lock on SQLite).
    if store.is_sqlite:
        async with store._write_lock, store.write_engine.begin() as conn:
            yield conn
    else:
        async with store.write_engine.begin() as conn:
            yield conn


async def _write(store: Store, opened: OpenedBundle, summary: ImportSummary) -> None:
    ids = [t.task.id for t in opened.tasks]
    async with _transaction(store) as conn:
        existing = set((await conn.execute(select(TaskRow.id).where(TaskRow.id.in_(ids)))).scalars())
        tasks = [t for t in opened.tasks if t.task.id not in existing]
        summary.skipped_task_ids = [i for i in ids if i in existing]
        summary.imported_task_ids = [t.task.id for t in tasks]
        if not tasks:
            return
        seen_sessions: set[str] = set()
        rows: dict[type, list[dict[str, Any]]] = {
            m: [] for m in (TaskRow, AttemptRow, SessionRow, RunRow, EventRow, ValidationRow, FeedbackRow)
        }
        for t in tasks:
            rows[TaskRow].append(_row(t.task, read_only=True, origin=opened.origin))
            rows[AttemptRow].extend(_row(a) for a in t.attempts)
            for session in t.sessions:
                if session.id in seen_sessions:
                    continue
                seen_sessions.add(session.id)
                events = t.events.get(session.id, [])
                next_seq = max((e.seq for e in events), default=0) + 1
                rows[SessionRow].append(_row(session, next_seq=next_seq))
                rows[EventRow].extend({k: v for k, v in _row(e).items() if k != "id"} for e in events)
            rows[RunRow].extend(_row(r) for r in t.runs)
            rows[ValidationRow].extend(_row(v) for v in t.validations)
            rows[FeedbackRow].extend(_row(f) for f in t.feedback)
        for model, batch in rows.items():  # dict order is foreign-key order
            if batch:
                await conn.execute(insert(model), batch)
        summary.events = len(rows[EventRow])


async def import_bundle(store: Store, path: Path) -> ImportSummary:
    """Verify ``path`` fully, then add its tasks read-only; raises ``BundleError`` having written nothing."""
    path = Path(path)
    loaded = await asyncio.to_thread(load_bundle, path)
    if not loaded.report.ok:
        shown = loaded.report.failures[:5]
        more = len(loaded.report.failures) - len(shown)
        raise BundleError(
            f"refusing to import {path.name}: verification failed: "
            + "; ".join(shown)
            + (f"; and {more} more" if more > 0 else "")
            + ". Nothing was imported."
        )
    opened = await asyncio.to_thread(parse_bundle, loaded)
    if opened.load_problems:
        raise BundleError(
            f"refusing to import {path.name}: {'; '.join(opened.load_problems[:5])}. Nothing was imported."
        )
    summary = ImportSummary(bundle_id=opened.bundle_id)
    try:
        await _write(store, opened, summary)
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        raise BundleError(
            f"cannot import {path.name} into {store.display_name}: {orig or exc}. Nothing was imported."
        ) from None
    return summary
