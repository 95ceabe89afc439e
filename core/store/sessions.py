"""Sessions (the event streams) and runs (one model conversation inside a session)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, String, bindparam, func, insert, select, update

from core.domain.records import RunRecord, SessionRecord
from core.store.base import new_id
from core.store.big_values import offload_values, read_back
from core.store.eventlog import EventLog, NewEvent
from core.store.models import RunRow, SessionRow, utcnow

# Built once: a statement made per call (``insert(...).values(values)``) was built and cache-keyed
# again on every run start and end, the larger part of those small transactions' CPU.
_INSERT_SESSION = insert(SessionRow)
_INSERT_RUN = insert(RunRow)
_FINISH_RUN = update(RunRow).where(RunRow.id == bindparam("finished_run", type_=String))


class SessionRepository(EventLog):
    """A mixin of ``Store``."""

    async def create_session(
        self, *, task_id: str | None, kind: str, label: str = "", parent_session_id: str | None = None
    ) -> SessionRecord:
        """A new event stream; written by the event writer, so concurrent team nodes share a commit."""
        values: dict[str, Any] = {
            "id": new_id(),
            "task_id": task_id,
            "kind": kind,
            "label": label,
            "parent_session_id": parent_session_id,
            "next_seq": 1,
            "created_at": utcnow(),
        }

        def insert_session(conn: Connection) -> None:
            conn.execute(_INSERT_SESSION, values)

        await self.write_in_log_order(values["id"], insert_session)
        return SessionRecord.model_validate(values)

    async def list_sessions(self, task_id: str) -> list[SessionRecord]:
        q = select(SessionRow).where(SessionRow.task_id == task_id).order_by(SessionRow.created_at)
        return await self._select(SessionRecord, q)

    async def get_sessions(self, session_ids: Sequence[str]) -> list[SessionRecord]:
        """Sessions by id, in id order; unknown ids are left out.

        Team nodes' sessions belong to no task, so ``list_sessions`` cannot find them; export
        reaches them through the task's runs.
        """
        if not session_ids:
            return []
        q = select(SessionRow).where(SessionRow.id.in_(list(session_ids))).order_by(SessionRow.id)
        return await self._select(SessionRecord, q)

    async def create_run(
        self,
        *,
        session_id: str,
        kind: str,
        model: str,
        task_id: str | None = None,
        attempt_id: str | None = None,
        node_id: str | None = None,
    ) -> RunRecord:
        row = RunRow(
            id=new_id(),
            session_id=session_id,
            kind=kind,
            model=model,
            task_id=task_id,
            attempt_id=attempt_id,
            node_id=node_id,
            state="running",
        )
        row.started_at = utcnow()
        return await self._insert(row, RunRecord)

    async def finish_run(self, run_id: str, *, finish_reason: str, output_text: str) -> None:
        values = _finished_values(finish_reason, output_text)
        policy = self.content_policy
        async with self._write() as s:
            if policy.offloads(output_text):
                owner = await s.scalar(
                    select(func.coalesce(RunRow.task_id, RunRow.session_id)).where(RunRow.id == run_id)
                )
                conn = await s.connection()
                values = await conn.run_sync(offload_values, RunRow, values, owner, policy)
            await s.execute(update(RunRow).where(RunRow.id == run_id).values(values))

    async def start_run(
        self,
        *,
        session_id: str,
        kind: str,
        model: str,
        started: NewEvent,
        task_id: str | None = None,
        attempt_id: str | None = None,
        node_id: str | None = None,
    ) -> RunRecord:
        """``create_run`` and the run's first event, queued behind the loop like the run's other events.

        Nothing waits for them: the run's end (``end_run``) is awaited and commits everything queued
        before it, so a finished run is whole on disk, and a read of runs or events waits for the
        queue first. A row that cannot be written is raised by the run's next append or by its end,
        as for any of its events. Awaiting the start bought nothing a reader or crash recovery uses
        and cost every run a commit on the loop's path (a run killed before its first commit
        leaves no row, as one killed before its start was written always did); the model's first
        call is no longer held until the row is on disk.
        """
        values: dict[str, Any] = {
            "id": new_id(),
            "session_id": session_id,
            "kind": kind,
            "model": model,
            "task_id": task_id,
            "attempt_id": attempt_id,
            "node_id": node_id,
            "state": "running",
            "started_at": utcnow(),
        }

        def insert_run(conn: Connection) -> None:
            conn.execute(_INSERT_RUN, values)

        self.enqueue_events(session_id, [started], run_id=values["id"], task_id=task_id, before=insert_run)
        return RunRecord.model_validate(
            {**values, "finish_reason": None, "output_text": None, "finished_at": None}
        )

    async def end_run(
        self,
        run_id: str,
        *,
        session_id: str,
        finished: NewEvent,
        finish_reason: str,
        output_text: str,
        task_id: str | None = None,
    ) -> None:
        """``finish_run`` and the run's last event in one transaction of the event writer."""
        values = _finished_values(finish_reason, output_text)
        policy = self.content_policy

        def finish(conn: Connection) -> None:
            stored = offload_values(conn, RunRow, values, task_id or session_id, policy)
            conn.execute(_FINISH_RUN, {**stored, "finished_run": run_id})

        await self.commit_events(session_id, [finished], run_id=run_id, task_id=task_id, before=finish)

    async def get_run(self, run_id: str) -> RunRecord:
        await self.flush()  # a run started in this process may still be queued (``start_run``)
        return (await read_back(self, RunRow, [await self._get(RunRecord, RunRow, run_id, "run")]))[0]

    async def list_runs(
        self, *, task_id: str | None = None, attempt_id: str | None = None
    ) -> list[RunRecord]:
        await self.flush()  # a run started in this process may still be queued (``start_run``)
        q = select(RunRow)
        if task_id is not None:
            q = q.where(RunRow.task_id == task_id)
        if attempt_id is not None:
            q = q.where(RunRow.attempt_id == attempt_id)
        return await read_back(self, RunRow, await self._select(RunRecord, q.order_by(RunRow.started_at)))


def _finished_values(finish_reason: str, output_text: str) -> dict[str, Any]:
    """A finished run's columns, one shape for ``finish_run`` and ``end_run``."""
    return {
        "state": "finished",
        "finish_reason": finish_reason,
        "output_text": output_text,
        "finished_at": utcnow(),
    }
