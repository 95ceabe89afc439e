"""The SQLite watcher when the workspace's share disappears and comes back.

The workspace file sits alone in a folder (the "share"); renaming the folder away is what an
unmounted share looks like through the path, while the watcher's open connection would go on
reading the moved file and notice nothing. Every wait is on a bus notice, bounded only by a
generous timeout against a hang.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.events import BusEvent, EventBus, TaskChanged, WorkspaceConnection
from core.store import Store
from core.store.reachability import Backoff
from core.store.watch import ChangeWatcher

HANG_S = 30.0


async def test_a_vanished_share_is_announced_offline_then_online_and_watched_again(tmp_path: Path) -> None:
    share, away = tmp_path / "share", tmp_path / "share-unmounted"
    share.mkdir()
    store = await Store.open(f"sqlite+aiosqlite:///{share / 'workspace.sqlite3'}")
    bus = EventBus()
    seen: asyncio.Queue[BusEvent] = asyncio.Queue()
    bus.subscribe(lambda e: seen.put_nowait(e) if isinstance(e, (WorkspaceConnection, TaskChanged)) else None)
    watcher = ChangeWatcher(store, bus, interval=0.02, backoff=Backoff(first_s=0.02, cap_s=0.1))
    await watcher.start()
    other: Store | None = None
    try:
        async with asyncio.timeout(HANG_S):
            await watcher.ready.wait()
            share.rename(away)
            assert await seen.get() == WorkspaceConnection(online=False)
            assert not watcher.online and not share.exists()  # no empty workspace made in its place
            away.rename(share)
            assert await seen.get() == WorkspaceConnection(online=True)
            assert watcher.online
            other = await Store.open(store.url)  # another process writes once the share is back
            task = await other.create_task("written after the share came back")
            notice = await seen.get()
        assert isinstance(notice, TaskChanged) and notice.task_id == task.id
    finally:
        await watcher.close()
        if other is not None:
            await other.close()
        await store.close()
