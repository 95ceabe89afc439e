"""A reviewer's claim on a task, as the store, the command line and the desk see it."""

from __future__ import annotations

from datetime import datetime

from core.domain.records import _Record


class ClaimRecord(_Record):
    """A lease: ``reviewer`` reviews ``task_id`` until ``expires_at`` unless it is renewed."""

    task_id: str
    reviewer: str
    claimed_at: datetime
    expires_at: datetime

    def active(self, now: datetime) -> bool:
        return self.expires_at > now

    def describe(self) -> str:
        """The words every view uses ("claimed by ana until 14:05", local time)."""
        return f"claimed by {self.reviewer} until {self.expires_at.astimezone().strftime('%H:%M')}"


__all__ = ["ClaimRecord"]
