"""Crash recovery's reads and writes for many tasks at once; the decisions live in ``core.tasks.recovery``.

A desk killed mid-run of a big batch leaves thousands of tasks to recover at its next start, and
the desk's main window waits for it. One task at a time cost five to eight write transactions per
task (each run's event and end, the session, the task's move): ~47 s for 3,000 tasks at 1M tasks.
Here a batch's facts are read in two queries and its moves written in one transaction, with every
guarantee of ``update_task``: each task moves by compare-and-set on its version, with its event and
its attempt's ending; a task changed meanwhile is left exactly as it was, the rest of the batch
goes through; a crash mid-batch leaves every task of the batch either recovered or untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from core.domain.facts import FinishReason
from core.domain.records import AttemptRecord, EventRecord, RunRecord, TaskRecord
from core.domain.status import TaskStatus, ValidationOutcome
from core.errors import StoreError
from core.store.base import new_id
from core.store.big_values import offload_values, read_back
from core.store.chunks import CHUNKED_PAYLOAD, ContentPolicy, offload_tree
from core.store.eventlog import EventLog, NewEvent, PendingAppend, insert_events
from core.store.models import AttemptRow, EventRow, RunRow, SessionRow, TaskRow, utcnow

# Columns of an attempt that judging an interruption reads: everything but the evidence packet,
# which can be megabytes per attempt and decides nothing here.
_ATTEMPT_FACTS = [c for c in AttemptRow.__table__.columns if c.name not in ("packet", "final_output_ref")]


@dataclass(frozen=True)
class InterruptedRun:
    """A run left ``running`` by a dead process: it is finished as interrupted, with its event."""

    run_id: str
    session_id: str
    event: NewEvent


@dataclass(frozen=True)
class TaskRecovery:
    """One task's move as crash recovery decided it, applied only if the task is still at ``expected_version``.

    ``session_id`` None: the task has no main session (a workspace written by hand or an older
    tool); one is created in the same transaction, and only if the task moves.
    """

    task_id: str
    expected_version: int
    status: TaskStatus
    validation_outcome: ValidationOutcome | None
    session_id: str | None
    event: NewEvent
    ending: tuple[str, dict[str, Any]] | None = None
    runs: list[InterruptedRun] = field(default_factory=list)


class RecoveryRepository(EventLog):
    """A mixin of ``Store``."""

    async def recovery_facts(
        self, task_ids: Sequence[str]
    ) -> tuple[dict[str, list[AttemptRecord]], dict[str, list[RunRecord]]]:
        """The attempts (in index order, ``packet`` left out as None) and running runs of ``task_ids``.

        Two queries for the whole batch instead of two per task.
        """
        attempts: dict[str, list[AttemptRecord]] = {t: [] for t in task_ids}
        runs: dict[str, list[RunRecord]] = {t: [] for t in task_ids}
        if not task_ids:
            return attempts, runs
        ids = list(task_ids)
        await self.flush()  # a run started in this process may still be queued (``start_run``)
        async with self._read() as s:
            found = await s.execute(
                select(*_ATTEMPT_FACTS)
                .where(AttemptRow.task_id.in_(ids))
                .order_by(AttemptRow.task_id, AttemptRow.index)
            )
            for row in found.mappings():
                attempts[row["task_id"]].append(AttemptRecord.model_validate({**row, "packet": None}))
            running = await s.scalars(
                select(RunRow)
                .where(RunRow.task_id.in_(ids), RunRow.state == "running")
                .order_by(RunRow.started_at)
            )
            for run in running.all():
                runs[run.task_id or ""].append(RunRecord.model_validate(run))
        for task_id in ids:  # an answer or an output in the chunk store, read back
            attempts[task_id] = await read_back(self, AttemptRow, attempts[task_id])
            runs[task_id] = await read_back(self, RunRow, runs[task_id])
        return attempts, runs

    async def attempt_run_events(self, attempt_ids: Sequence[str]) -> dict[str, list[EventRecord]]:
        """Every event of the runs each attempt started, in log order, big contents left as references.

        One query for a batch of attempts: what an attempt that never wrote its packet recorded.
        """
        found: dict[str, list[EventRecord]] = {a: [] for a in attempt_ids}
        if not attempt_ids:
            return found
        q = (
            select(EventRow, RunRow.attempt_id)
            .join(RunRow, (RunRow.id == EventRow.run_id) & (RunRow.session_id == EventRow.session_id))
            .where(RunRow.attempt_id.in_(list(attempt_ids)))
            .order_by(EventRow.id)
        )
        await self.flush()
        async with self._read() as s:
            for event, attempt_id in (await s.execute(q)).all():
                found[str(attempt_id)].append(EventRecord.model_validate(event))
        for records in found.values():  # an answer stored as chunks is read back: recovery judges it
            for i, record in enumerate(records):
                if CHUNKED_PAYLOAD in record.payload:
                    records[i] = record.model_copy(
                        update={"payload": await self.resolve_payload(record.payload)}
                    )
        return found

    async def recover_tasks(self, recoveries: Sequence[TaskRecovery]) -> list[TaskRecord]:
        """Apply ``recoveries`` in one transaction; returns the tasks that moved, in the given order.

        The tasks are locked (``FOR UPDATE`` on PostgreSQL; ``BEGIN IMMEDIATE`` on SQLite) and
        their versions compared before anything is written, so a task someone else recovered or
        resumed since it was read is skipped whole: none of its runs are ended and no event is
        written for it, where the one-by-one path had already ended its runs.

        On SQLite the batch runs in a worker thread on the event writer's plain connection, under
        the same write lock: a batch is a few hundred statements (each session's event counter is
        bumped on its own), and through aiosqlite every one of them was a hop to its thread and
        back; in a thread they cost microseconds each, and the desk's event loop stays free.
        """
        if not recoveries:
            return []
        if len({r.task_id for r in recoveries}) != len(recoveries):
            raise ValueError("a task can be recovered only once per batch")
        await self.flush()  # this process's queued events first: the log keeps their order
        now = utcnow()
        with self._database_errors():
            # The versions are read first, and a read alone would not take the write lock that
            # makes them hold until the commit: another process could move a task in between.
            work = list(recoveries)
            policy = self.content_policy
            return await self._write_sync(lambda conn: _recover(conn, work, now, policy), lock_first=True)


def _recover(
    conn: Connection, recoveries: list[TaskRecovery], now: datetime, policy: ContentPolicy
) -> list[TaskRecord]:
    """Lock the tasks, keep those still at their expected version, move them; their new records."""
    current = conn.execute(
        select(TaskRow.id, TaskRow.version)
        .where(TaskRow.id.in_([r.task_id for r in recoveries]))
        .with_for_update()
    )
    versions = {task_id: version for task_id, version in current}
    moving = [r for r in recoveries if versions.get(r.task_id) == r.expected_version]
    if not moving:
        return []
    _write_moves(conn, moving, now, policy)
    rows = conn.execute(select(TaskRow).where(TaskRow.id.in_([r.task_id for r in moving])))
    records = {row.id: TaskRecord.model_validate(row) for row in rows}
    return [records[r.task_id] for r in moving]


def _write_moves(conn: Connection, moving: list[TaskRecovery], now: datetime, policy: ContentPolicy) -> None:
    """Every statement of a batch, each run as one executemany: sessions, tasks, attempts, runs, events."""
    sessions = {r.task_id: r.session_id or new_id() for r in moving}
    missing = [r.task_id for r in moving if r.session_id is None]
    if missing:
        conn.execute(
            insert(SessionRow),
            [
                {
                    "id": sessions[t],
                    "task_id": t,
                    "kind": "main",
                    "label": "main",
                    "parent_session_id": None,
                    "next_seq": 1,
                    "created_at": now,
                }
                for t in missing
            ],
        )
    moved = conn.execute(
        update(TaskRow)
        .where(TaskRow.id == bindparam("b_id"), TaskRow.version == bindparam("b_version"))
        .values(
            status=bindparam("b_status"),
            validation_outcome=bindparam("b_outcome"),
            main_session_id=bindparam("b_session"),
            runner=None,
            updated_at=now,
            version=TaskRow.version + 1,
        ),
        [
            {
                "b_id": r.task_id,
                "b_version": r.expected_version,
                "b_status": r.status.value,
                "b_outcome": r.validation_outcome.value if r.validation_outcome is not None else None,
                "b_session": sessions[r.task_id],
            }
            for r in moving
        ],
    )
    if _miscounted(moved.rowcount, len(moving)):  # versions were checked under lock: a broken invariant
        raise StoreError(f"crash recovery moved {moved.rowcount} of {len(moving)} locked tasks")
    _end_attempts(conn, [_offloaded(conn, r, policy) for r in moving if r.ending is not None])
    runs = [run for r in moving for run in r.runs]
    if runs:
        conn.execute(
            update(RunRow)
            .where(RunRow.id == bindparam("b_id"), RunRow.state == "running")
            .values(
                state="finished",
                finish_reason=FinishReason.INTERRUPTED.value,
                output_text="",
                finished_at=now,
            ),
            [{"b_id": run.run_id} for run in runs],
        )
    # Per task, its runs' events before its own, as the one-by-one path wrote them.
    appends: list[PendingAppend] = []
    for r in moving:
        for run in r.runs:
            appends.append(PendingAppend(run.session_id, [run.event], run_id=run.run_id, task_id=r.task_id))
        appends.append(PendingAppend(sessions[r.task_id], [r.event], task_id=r.task_id))
    insert_events(conn, appends, now)


def _offloaded(conn: Connection, recovery: TaskRecovery, policy: ContentPolicy) -> TaskRecovery:
    """A crashed attempt's packet as ``update_attempt`` stores one: big texts as chunk references."""
    assert recovery.ending is not None
    attempt_id, fields = recovery.ending
    fields = offload_values(conn, AttemptRow, fields, recovery.task_id, policy)
    if fields.get("packet") is not None:
        fields = {**fields, "packet": offload_tree(conn, fields["packet"], recovery.task_id, policy)}
    return replace(recovery, ending=(attempt_id, fields))


def _end_attempts(conn: Connection, ending: list[TaskRecovery]) -> None:
    """Attempt endings grouped by the fields they set (a running attempt sets more than an ended one)."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in ending:
        assert r.ending is not None
        attempt_id, fields = r.ending
        values = {f"b_{k}": (v.value if hasattr(v, "value") else v) for k, v in fields.items()}
        groups.setdefault(tuple(sorted(fields)), []).append(
            {"b_attempt": attempt_id, "b_task": r.task_id, **values}
        )
    for keys, params in groups.items():
        ended = conn.execute(
            update(AttemptRow)
            .where(AttemptRow.id == bindparam("b_attempt"), AttemptRow.task_id == bindparam("b_task"))
            .values(**{k: bindparam(f"b_{k}") for k in keys}),
            params,
        )
        if _miscounted(ended.rowcount, len(params)):
            raise StoreError(
                f"crash recovery found {ended.rowcount} of {len(params)} attempts to end; nothing was recovered"
            )


def _miscounted(rowcount: int, expected: int) -> bool:
    """A batch's statement changed another number of rows than it was given (PostgreSQL's drivers
    report -1 for an executemany: nothing to check there, and the tasks' row locks guard instead)."""
    return rowcount >= 0 and rowcount != expected


__all__ = ["InterruptedRun", "RecoveryRepository", "TaskRecovery"]
