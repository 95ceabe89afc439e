"""A reviewer looking at a task, as the store, the services and the desk see it."""

from __future__ import annotations

from datetime import datetime

from core.domain.records import _Record


class PresenceRecord(_Record):
    """``reviewer`` has ``task_id`` on screen until ``expires_at`` unless their desk renews it.

    Unlike a claim it refuses nobody: any number of reviewers may look at one task.
    """

    task_id: str
    reviewer: str
    seen_at: datetime
    expires_at: datetime

    def active(self, now: datetime) -> bool:
        return self.expires_at > now


__all__ = ["PresenceRecord"]
