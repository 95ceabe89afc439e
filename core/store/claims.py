"""Review claims: leases on tasks, taken and handed over atomically on both engines.

A claim row per task (the task id is its key) means two reviewers can never hold one task; an
expired row is treated as no claim and overwritten by the next claimer. Every change is one
conditional upsert (``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` the row is free or already
ours), which both engines evaluate against the latest committed row, so a stale read can never
hand a held task to a second reviewer.

"Next task" must not make concurrent claimers queue behind each other: on PostgreSQL the
candidate task row is locked with ``FOR UPDATE SKIP LOCKED`` so each claimer walks past the rows
others are taking; on SQLite the whole pick-and-claim runs in one ``BEGIN IMMEDIATE`` write
transaction (the store's writer), which serialises claimers across processes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, delete, exists, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from core.domain.claims import ClaimRecord
from core.domain.queue import QueueFilter
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.errors import StoreError
from core.store import queue_sql
from core.store.eventlog import EventLog, NewEvent, PendingAppend, insert_events
from core.store.models import ClaimRow, TaskRow, utcnow

# A "next task" claimer that loses every race for its first candidates gives up after this many.
NEXT_ATTEMPTS = 50


class ClaimRepository(EventLog):
    """A mixin of ``Store``; times are passed in (UTC) so leases can be tested with a clock."""

    async def get_claim(self, task_id: str, now: datetime) -> ClaimRecord | None:
        """The task's claim if it is still in force."""
        found = await self._select(
            ClaimRecord, select(ClaimRow).where(ClaimRow.task_id == task_id, ClaimRow.expires_at > now)
        )
        return found[0] if found else None

    async def claims_for(self, task_ids: Sequence[str], now: datetime) -> dict[str, ClaimRecord]:
        """The claims in force among ``task_ids`` (a queue page's rows)."""
        if not task_ids:
            return {}
        q = select(ClaimRow).where(ClaimRow.task_id.in_(list(task_ids)), ClaimRow.expires_at > now)
        return {c.task_id: c for c in await self._select(ClaimRecord, q)}

    async def list_claims(self, now: datetime, *, reviewer: str | None = None) -> list[ClaimRecord]:
        q = select(ClaimRow).where(ClaimRow.expires_at > now)
        if reviewer is not None:
            q = q.where(ClaimRow.reviewer == reviewer)
        return await self._select(ClaimRecord, q.order_by(ClaimRow.claimed_at, ClaimRow.task_id))

    async def put_claim(
        self,
        task_id: str,
        reviewer: str,
        *,
        now: datetime,
        expires_at: datetime,
        force: bool = False,
        event: NewEvent | None = None,
    ) -> tuple[ClaimRecord, ClaimRecord | None]:
        """Claim or renew; with ``force``, take the task from whoever holds it.

        Returns the claim now in force and the claim it displaced (another reviewer's, still in
        force) or None. Without ``force`` a task held by someone else is left alone and their
        claim is returned as the one in force. ``event`` is appended to the task's main session
        in the same transaction, and only if the claim changed hands.
        """
        await self.flush()
        async with self._write() as s:
            task = await self._task_for_claim(s, task_id)
            before = await s.get(ClaimRow, task.id)
            previous = ClaimRecord.model_validate(before) if before is not None else None
            if previous is not None and (previous.reviewer == reviewer or not previous.active(now)):
                previous = None
            if previous is not None and not force:
                return previous, None
            taken = await s.execute(self._upsert(task.id, reviewer, now, expires_at, force=force))
            if taken.first() is None:  # another transaction claimed it since we read it
                holder = await s.get(ClaimRow, task.id, populate_existing=True)
                assert holder is not None
                return ClaimRecord.model_validate(holder), None
            if event is not None and previous is not None and task.main_session_id is not None:
                await self._append(s, task, event)
            row = await s.get(ClaimRow, task.id, populate_existing=True)
            return ClaimRecord.model_validate(row), previous

    async def delete_claim(self, task_id: str, reviewer: str, *, event: NewEvent | None = None) -> bool:
        """Drop ``reviewer``'s claim (in force or not); False when they held none."""
        await self.flush()
        async with self._write() as s:
            task = await self._task_for_claim(s, task_id)
            gone = await s.execute(
                delete(ClaimRow)
                .where(ClaimRow.task_id == task.id, ClaimRow.reviewer == reviewer)
                .returning(ClaimRow.task_id)
            )
            if gone.first() is None:
                return False
            if event is not None and task.main_session_id is not None:
                await self._append(s, task, event)
            return True

    async def claim_next(
        self,
        reviewer: str,
        *,
        flt: QueueFilter,
        statuses: Sequence[TaskStatus],
        now: datetime,
        expires_at: datetime,
    ) -> TaskRecord | None:
        """Claim the writable task in ``statuses`` that has waited longest and nobody holds.

        Ordered by ``updated_at`` (when it entered its status) so the (status, updated_at) index
        hands candidates over in order and the scan stops at the first free one.
        """
        free = ~exists().where(ClaimRow.task_id == TaskRow.id, ClaimRow.expires_at > now)
        pick = (  # ids only: the candidates are sorted, and a task's text can be long
            select(TaskRow.id)
            .where(
                TaskRow.status.in_([s.value for s in statuses]),
                TaskRow.read_only.is_(False),
                queue_sql.filter_clause(self, flt),
                free,
            )
            .order_by(TaskRow.updated_at, TaskRow.id)
            .limit(1)
        )
        if not self.is_sqlite:
            pick = pick.with_for_update(of=TaskRow, skip_locked=True)
        async with self._write() as s:
            lost: list[str] = []
            for _ in range(NEXT_ATTEMPTS):
                q = pick.where(TaskRow.id.not_in(lost)) if lost else pick
                task_id = (await s.scalars(q)).first()
                if task_id is None:
                    return None
                # The pick's snapshot may predate a claim committed a moment ago (PostgreSQL
                # re-checks only the locked task row); the upsert sees the latest claim.
                taken = await s.execute(self._upsert(task_id, reviewer, now, expires_at, force=False))
                if taken.first() is not None:
                    return TaskRecord.model_validate(await s.get(TaskRow, task_id))
                lost.append(task_id)
        return None

    def _upsert(
        self, task_id: str, reviewer: str, now: datetime, expires_at: datetime, *, force: bool
    ) -> Any:
        """Insert the claim, or overwrite the task's row when it is free, ours, or ``force``d."""
        insert = sqlite_insert if self.is_sqlite else pg_insert
        ins = insert(ClaimRow).values(
            task_id=task_id, reviewer=reviewer, claimed_at=now, expires_at=expires_at
        )
        # A renewal keeps when the reviewer first took the task; a new holder starts now.
        claimed_at = case((ClaimRow.reviewer == reviewer, ClaimRow.claimed_at), else_=ins.excluded.claimed_at)
        return ins.on_conflict_do_update(
            index_elements=[ClaimRow.task_id],
            set_={
                "reviewer": ins.excluded.reviewer,
                "claimed_at": claimed_at,
                "expires_at": ins.excluded.expires_at,
            },
            where=None if force else or_(ClaimRow.expires_at <= now, ClaimRow.reviewer == reviewer),
        ).returning(ClaimRow.task_id)

    async def _task_for_claim(self, s: AsyncSession, task_id: str) -> TaskRow:
        """The task, locked on PostgreSQL so claim changes on one task run one at a time."""
        q = select(TaskRow).where(TaskRow.id == task_id)
        if not self.is_sqlite:
            q = q.with_for_update(of=TaskRow)
        row = (await s.scalars(q)).first()
        if row is None:
            raise StoreError(f"no task with id {task_id!r}")
        return row

    async def _append(self, s: AsyncSession, task: TaskRow, event: NewEvent) -> None:
        assert task.main_session_id is not None
        conn = await s.connection()
        append = PendingAppend(task.main_session_id, [event], task_id=task.id)
        await conn.run_sync(insert_events, [append], utcnow())


__all__ = ["NEXT_ATTEMPTS", "ClaimRepository"]
