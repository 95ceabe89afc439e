"""The queue's read side as the model sees it, and its stand-in while the workspace is opening.

The desk paints the queue before the store exists (``desktop.app.boot_window``): the model then
reads through a ``PendingQueue``, whose reads wait until the store's queue is attached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from core.domain.queue import QUEUE_GROUPS, PageCursor, QueueFilter, QueueGroup, QueuePage, QueueSort
from core.domain.status import TaskStatus
from core.tasks.queue import QueueSnapshot, RowUpdate, TaskQueue


class QueueReads(Protocol):
    """What the model asks of the queue's read side (``core.tasks.queue.TaskQueue``)."""

    async def snapshot(
        self,
        flt: QueueFilter,
        sort: QueueSort,
        *,
        page_size: int,
        groups: Sequence[QueueGroup] = QUEUE_GROUPS,
    ) -> QueueSnapshot: ...

    async def page(
        self, group: QueueGroup, flt: QueueFilter, sort: QueueSort, *, after: PageCursor | None, limit: int
    ) -> QueuePage: ...

    async def counts(self, flt: QueueFilter) -> dict[TaskStatus, int]: ...

    async def row(self, task_id: str, flt: QueueFilter) -> RowUpdate | None: ...


class PendingQueue:
    """The queue before the workspace is open: each read waits for ``attach``, then goes through.

    A filter typed or a column sorted on the seeded queue is therefore asked as soon as the store
    can answer, never dropped and never answered from the stdlib's first read.
    """

    def __init__(self) -> None:
        self._queue: TaskQueue | None = None
        self._ready = asyncio.Event()

    @property
    def attached(self) -> bool:
        return self._queue is not None

    def attach(self, queue: TaskQueue) -> None:
        self._queue = queue
        self._ready.set()

    async def _wait(self) -> TaskQueue:
        await self._ready.wait()
        assert self._queue is not None
        return self._queue

    async def snapshot(
        self,
        flt: QueueFilter,
        sort: QueueSort,
        *,
        page_size: int,
        groups: Sequence[QueueGroup] = QUEUE_GROUPS,
    ) -> QueueSnapshot:
        return await (await self._wait()).snapshot(flt, sort, page_size=page_size, groups=groups)

    async def page(
        self, group: QueueGroup, flt: QueueFilter, sort: QueueSort, *, after: PageCursor | None, limit: int
    ) -> QueuePage:
        return await (await self._wait()).page(group, flt, sort, after=after, limit=limit)

    async def counts(self, flt: QueueFilter) -> dict[TaskStatus, int]:
        return await (await self._wait()).counts(flt)

    async def row(self, task_id: str, flt: QueueFilter) -> RowUpdate | None:
        return await (await self._wait()).row(task_id, flt)


__all__ = ["PendingQueue", "QueueReads"]
