"""Presence rows: who has which task on screen, as short leases (migration 0010_presence).

One row per (task, reviewer), upserted on every renewal, deleted when the desk moves on. A desk
that dies leaves a row that simply expires; expired rows are ignored by readers and swept by the
next writer, so the table stays as small as the number of open desks.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from core.domain.presence import PresenceRecord
from core.store.base import StoreBase
from core.store.models import PresenceRow


class PresenceRepository:
    """Presence over a ``Store``'s engines (composition: the store class stays small)."""

    def __init__(self, store: StoreBase) -> None:
        self.store = store

    async def see(
        self, task_id: str, reviewer: str, *, now: datetime, expires_at: datetime
    ) -> PresenceRecord:
        """Record or renew ``reviewer`` looking at ``task_id``; they look at nothing else now."""
        insert = sqlite_insert if self.store.is_sqlite else pg_insert
        ins = insert(PresenceRow).values(
            task_id=task_id, reviewer=reviewer, seen_at=now, expires_at=expires_at
        )
        upsert = ins.on_conflict_do_update(
            index_elements=[PresenceRow.task_id, PresenceRow.reviewer],
            set_={"expires_at": ins.excluded.expires_at},
        )
        async with self.store._write() as s:
            # A reviewer's desk shows one task: moving on ends the old presence, and lapsed rows
            # of anyone go with it (they would only be skipped by every reader).
            await s.execute(
                delete(PresenceRow).where(
                    ((PresenceRow.reviewer == reviewer) & (PresenceRow.task_id != task_id))
                    | (PresenceRow.expires_at <= now)
                )
            )
            await s.execute(upsert)
            row = await s.get(PresenceRow, (task_id, reviewer), populate_existing=True)
            assert row is not None
            return PresenceRecord.model_validate(row)

    async def leave(self, task_id: str, reviewer: str) -> bool:
        """``reviewer`` no longer looks at ``task_id``; False when no row was there."""
        async with self.store._write() as s:
            gone = await s.execute(
                delete(PresenceRow)
                .where(PresenceRow.task_id == task_id, PresenceRow.reviewer == reviewer)
                .returning(PresenceRow.task_id)
            )
            return gone.first() is not None

    async def viewers(self, task_ids: Sequence[str] | None, now: datetime) -> list[PresenceRecord]:
        """Presence in force, on these tasks or (None) on every task, oldest first."""
        q = select(PresenceRow).where(PresenceRow.expires_at > now)
        if task_ids is not None:
            if not task_ids:
                return []
            q = q.where(PresenceRow.task_id.in_(list(task_ids)))
        q = q.order_by(PresenceRow.seen_at, PresenceRow.reviewer)
        return await self.store._select(PresenceRecord, q)


__all__ = ["PresenceRepository"]
