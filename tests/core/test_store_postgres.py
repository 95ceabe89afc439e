"""The store on PostgreSQL: runs when EVIDENCE_DESK_TEST_PG_URL points at a scratch database.

CI has no PostgreSQL server, so this is skipped there; run it by hand against a throwaway
database (see the README) before changing the store.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from core.domain import TaskStatus
from core.errors import VersionConflict
from core.store import NewEvent, Store

PG_URL = os.environ.get("EVIDENCE_DESK_TEST_PG_URL")
pytestmark = pytest.mark.skipif(not PG_URL, reason="EVIDENCE_DESK_TEST_PG_URL not set")


async def test_postgres_concurrent_appends_and_versions() -> None:
    assert PG_URL is not None
    first, second = await Store.open(PG_URL), await Store.open(PG_URL)
    task = await first.create_task("postgres check")
    assert task.main_session_id is not None
    session = task.main_session_id

    async def writer(store: Store, w: int) -> None:
        for i in range(100):
            await store.append_event(session, "probe", {"w": w, "i": i})
        store.enqueue_events(session, [NewEvent(kind="queued", payload={"w": w})])
        await store.flush()

    await asyncio.gather(writer(first, 0), writer(second, 1), writer(first, 2))
    events = await first.get_session_events(session)
    assert [e.seq for e in events] == list(range(1, 304))
    moved = await first.update_task(task.id, expected_version=task.version, status=TaskStatus.RUNNING)
    with pytest.raises(VersionConflict):
        await second.update_task(task.id, expected_version=task.version, status=TaskStatus.CLOSED)
    assert (await second.get_task(task.id)).version == moved.version
    await first.close()
    await second.close()
