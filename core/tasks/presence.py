"""Who else is looking at a task: short leases the desk renews while a task is on screen.

A claim says "I am reviewing this, keep off"; presence only says "I have it open". It refuses
nobody and records nothing in the task's log (it changes every few seconds and says nothing
about the task), but it lets two analysts notice each other before either starts work.

The lease is short (``PRESENCE_LEASE``) so a desk that dies stops showing within half a minute,
and the desk renews well inside it (``PRESENCE_RENEW``). Time comes from an injected clock so
expiry is tested without waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from core.domain.presence import PresenceRecord
from core.store import Store
from core.store.presence import PresenceRepository
from core.tasks.claims import utc_now

PRESENCE_LEASE = timedelta(seconds=30)
PRESENCE_RENEW = timedelta(seconds=10)


class Presence:
    """The presence API every front end uses (the desk, tests)."""

    def __init__(self, store: Store, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._repo = PresenceRepository(store)
        self._clock = clock

    def now(self) -> datetime:
        return self._clock().astimezone(UTC)

    async def viewing(self, task_id: str, reviewer: str, lease: timedelta = PRESENCE_LEASE) -> PresenceRecord:
        """``reviewer`` has ``task_id`` on screen (again): record it or extend the lease."""
        now = self.now()
        return await self._repo.see(task_id, reviewer, now=now, expires_at=now + lease)

    async def left(self, task_id: str, reviewer: str) -> bool:
        """``reviewer`` moved away from ``task_id`` (or closed the desk)."""
        return await self._repo.leave(task_id, reviewer)

    async def viewers(self, task_ids: Sequence[str] | None = None) -> dict[str, list[str]]:
        """Reviewers looking at each task now (tasks nobody looks at are absent)."""
        found: dict[str, list[str]] = {}
        for p in await self._repo.viewers(task_ids, self.now()):
            found.setdefault(p.task_id, []).append(p.reviewer)
        return found


__all__ = ["PRESENCE_LEASE", "PRESENCE_RENEW", "Presence"]
