"""Small reads for the team panes that no repository answers: the batches' own rows."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from core.store.base import StoreBase
from core.store.models import BatchRow


async def batch_headers(store: StoreBase) -> dict[str, tuple[datetime, int]]:
    """Each batch's creation time and row count, by batch id."""
    async with store.read_session() as s:
        rows = (await s.execute(select(BatchRow.id, BatchRow.created_at, BatchRow.row_count))).all()
    return {str(i): (created, int(n)) for i, created, n in rows}


__all__ = ["batch_headers"]
