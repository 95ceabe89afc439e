"""A keystroke's rows are validated in a worker, not on the loop's thread (the desk's GUI thread).

Proved by structure rather than timing: a profile hook on the loop's thread counts calls of the
records' validator while the store reads pages; the records come back validated (aware
datetimes) and the loop's thread never ran the validator. Runs on both engines.
"""

from __future__ import annotations

import sys
import uuid
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any

from sqlalchemy import insert

from core.domain import records
from core.domain.queue import QUEUE_GROUPS, QueueFilter, QueueSort
from core.domain.status import TaskStatus
from core.store import Store, queue_sql
from core.store.models import TaskRow


async def test_pages_are_validated_off_the_loop_thread(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        now = datetime.now(UTC)
        rows = [
            {
                "id": uuid.uuid4().hex,
                "title": f"Task {i}: moon and tide",
                "text": f"Question {i} about the moon.",
                "status": list(TaskStatus)[i % len(TaskStatus)].value,
                "attempt_count": 0,
                "read_only": False,
                "version": 1,
                "created_at": now - timedelta(seconds=i),
                "updated_at": now - timedelta(seconds=i),
            }
            for i in range(300)
        ]
        async with store.write_engine.begin() as conn:
            await conn.execute(insert(TaskRow), rows)
        flt = QueueFilter(text="moon")
        groups = [(g.key, flt.statuses_in(g)) for g in QUEUE_GROUPS]
        validator = records._aware.__code__
        on_loop = [0]

        def watch(frame: FrameType, event: str, _arg: Any) -> None:
            if event == "call" and frame.f_code is validator:
                on_loop[0] += 1

        sys.setprofile(watch)  # this thread only: the one running the event loop
        try:
            pages = await queue_sql.first_pages(store, groups, flt=flt, sort=QueueSort(), limit=20)
            more = await queue_sql.page(
                store, statuses=[TaskStatus.CLOSED], flt=flt, sort=QueueSort(), after=None, limit=20
            )
        finally:
            sys.setprofile(None)
        got = [r for p in pages.values() for r in p.rows] + list(more.rows)
        assert len(got) > 100
        assert all(r.updated_at.tzinfo is not None for r in got)  # validated ...
        assert on_loop[0] == 0  # ... but not on the loop's thread
    finally:
        await store.close()
