"""Adding whole tasks from another workspace (a case bundle) in one transaction.

Rows keep their original ids, so importing the same tasks twice finds them already present and
skips them instead of duplicating them; everything else is written in one transaction, so a
failure midway leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, delete, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from core.domain.content import ContentPolicy
from core.domain.records import (
    AttemptRecord,
    EventRecord,
    FeedbackRecord,
    RunRecord,
    SessionRecord,
    TaskRecord,
    ValidationRecord,
)
from core.errors import StoreError
from core.store.base import StoreBase
from core.store.big_values import BIG_COLUMNS, offload_values
from core.store.chunks import offload_payload, offload_tree, put_content
from core.store.engine import db_message
from core.store.eventlog import CONTENT_REF
from core.store.models import (
    AttemptRow,
    Base,
    ContentOwnerRow,
    EventRow,
    FeedbackRow,
    RunRow,
    SessionRow,
    TaskRow,
    ValidationRow,
)
from core.store.search_index import index_tasks


class TaskImport(BaseModel):
    """One task with everything that belongs to it: the unit that is imported or skipped.

    ``sessions`` lists the task's sessions and those of its runs (team nodes' sessions belong to no
    task); ``events`` are events of those sessions. Event ids are not kept: this workspace numbers
    its own log rows, while each event keeps its session and ``seq``.
    """

    model_config = ConfigDict(frozen=True)

    task: TaskRecord
    attempts: list[AttemptRecord] = []
    sessions: list[SessionRecord] = []
    runs: list[RunRecord] = []
    events: list[EventRecord] = []
    validations: list[ValidationRecord] = []
    feedback: list[FeedbackRecord] = []


@dataclass(frozen=True)
class ImportResult:
    imported_task_ids: list[str] = field(default_factory=list)
    skipped_task_ids: list[str] = field(default_factory=list)
    events: int = 0


def _row(record: BaseModel, **overrides: Any) -> dict[str, Any]:
    values = record.model_dump(mode="python")
    values.update(overrides)
    return {k: (v.value if isinstance(v, Enum) else v) for k, v in values.items()}


def _rows(tasks: Sequence[TaskImport]) -> dict[type[Base], list[dict[str, Any]]]:
    """Insert rows per table, in foreign-key order (dict order is insertion order)."""
    rows: dict[type[Base], list[dict[str, Any]]] = {
        m: [] for m in (TaskRow, AttemptRow, SessionRow, RunRow, EventRow, ValidationRow, FeedbackRow)
    }
    seen_sessions: set[str] = set()
    for t in tasks:
        rows[TaskRow].append(_row(t.task))
        rows[AttemptRow].extend(_row(a) for a in t.attempts)
        events_by_session: dict[str, list[EventRecord]] = {}
        for e in t.events:
            events_by_session.setdefault(e.session_id, []).append(e)
        for session in t.sessions:
            if session.id in seen_sessions:
                continue  # listed by an earlier task too: written once, with that task's events
            seen_sessions.add(session.id)
            events = events_by_session.get(session.id, [])
            # The counter continues after the last imported event, so new events never collide.
            next_seq = max((e.seq for e in events), default=0) + 1
            rows[SessionRow].append(_row(session, next_seq=next_seq))
            rows[EventRow].extend({k: v for k, v in _row(e).items() if k != "id"} for e in events)
        rows[RunRow].extend(_row(r) for r in t.runs)
        rows[ValidationRow].extend(_row(v) for v in t.validations)
        rows[FeedbackRow].extend(_row(f) for f in t.feedback)
    return rows


def _offload_rows(
    conn: Connection, rows: dict[type[Base], list[dict[str, Any]]], policy: ContentPolicy
) -> None:
    """Imported evidence is stored as chunks like any other: big packet texts and event contents."""
    for attempt in rows[AttemptRow]:
        if attempt.get("packet") is not None:
            attempt["packet"] = offload_tree(conn, attempt["packet"], attempt["task_id"], policy)
    for table in (AttemptRow, RunRow, ValidationRow):  # answers, outputs and prompts (0012_big_values)
        ref_column = BIG_COLUMNS[table][1]  # on every row: one executemany needs one set of keys
        rows[table] = [
            offload_values(
                conn, table, {ref_column: None, **row}, row.get("task_id") or row.get("session_id"), policy
            )
            for row in rows[table]
        ]
    for event in rows[EventRow]:
        owner = event.get("task_id") or event["session_id"]
        event["payload"] = offload_payload(conn, event["payload"], owner, policy)
        if policy.offloads(event.get("content")):
            ref = put_content(conn, event["content"], event.get("task_id") or event["session_id"], policy)
            event["payload"] = {**event["payload"], CONTENT_REF: ref.model_dump()}
            event["content"] = None


def _adopt(conn: Connection, adopt: Mapping[str, Collection[str]], from_owner: str) -> None:
    owned = [{"owner": task_id, "content_sha": sha} for task_id, shas in adopt.items() for sha in shas]
    if owned:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        conn.execute(dialect.insert(ContentOwnerRow).on_conflict_do_nothing(), owned)
    conn.execute(delete(ContentOwnerRow).where(ContentOwnerRow.owner == from_owner))


def _check(tasks: Sequence[TaskImport]) -> None:
    for t in tasks:
        listed = {s.id for s in t.sessions}
        stray = sorted({e.session_id for e in t.events} - listed)
        if stray:
            raise ValueError(
                f"task {t.task.id[:8]} brings events of sessions it does not list: {', '.join(stray)}"
            )


class BulkImport(StoreBase):
    """A mixin of ``Store``."""

    async def import_records(
        self,
        tasks: Sequence[TaskImport],
        *,
        adopt: Mapping[str, Collection[str]] | None = None,
        from_owner: str | None = None,
    ) -> ImportResult:
        """Add tasks with all their records, keeping ids; tasks already present are skipped whole.

        One transaction: on any database error (say a session id already used by another task)
        nothing is written and ``StoreError`` names the database's reason. ``adopt`` maps a task id
        to the content it uses, stored beforehand under ``from_owner`` (the import's own owner):
        the task takes those texts over and ``from_owner`` lets go of them in the same transaction,
        so no moment exists when a kill leaves the tasks' texts without an owner, or an orphan
        under a task id no task has.
        """
        _check(tasks)
        ids = [t.task.id for t in tasks]
        try:
            async with self._write_conn() as conn:
                found = await conn.execute(select(TaskRow.id).where(TaskRow.id.in_(ids)))
                existing = set(found.scalars())
                fresh = [t for t in tasks if t.task.id not in existing]
                rows = _rows(fresh)
                await conn.run_sync(_offload_rows, rows, self.content_policy)
                for model, batch in rows.items():
                    if batch:
                        await conn.execute(insert(model), batch)
                await index_tasks(conn, [t.task.id for t in fresh])
                if from_owner is not None:
                    await conn.run_sync(_adopt, adopt or {}, from_owner)
        except SQLAlchemyError as exc:
            raise StoreError(f"the database refused the import ({db_message(exc)})") from None
        return ImportResult(
            imported_task_ids=[t.task.id for t in fresh],
            skipped_task_ids=[i for i in ids if i in existing],
            events=len(rows[EventRow]),
        )
