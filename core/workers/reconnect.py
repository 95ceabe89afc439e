"""A worker's link to its database: it waits out a restart or an outage of any length, and says so.

procrastinate's worker stops itself (and returns normally) when one of its side tasks loses the
database, and raises when fetching a job does; either way the process used to exit 0 and a
supervisor configured to restart on failure left it dead. The worker now runs procrastinate in a
loop: when a round ends without a requested stop, ``Link.until_up`` waits for the server with
capped exponential backoff and jitter (so a fleet of workers does not knock all at once), logging
one line when the database goes ("database unreachable, retrying in N s") and one when it is
back ("reconnected"), never one per try. ``give_up_after_s`` (default: never) turns a long outage
into ``DatabaseGaveUp``, which exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncEngine

from core.errors import StoreError
from core.store.engine import db_message
from core.store.reachability import BACKOFF_CAP_S, Backoff, probe

log = logging.getLogger(__name__)


class DatabaseGaveUp(StoreError):
    """The database stayed unreachable longer than the worker was told to wait."""


@dataclass
class Link:
    """Up, or down since when; counts outages for the summary and logs only state changes."""

    engine: AsyncEngine
    give_up_after_s: float | None = None
    backoff: Backoff = field(default_factory=Backoff)
    outages: int = 0
    down_since: float | None = None

    async def until_up(self, stop: asyncio.Event, cause: BaseException | None) -> bool:
        """Wait until the database answers; False when a stop was requested meanwhile.

        ``cause`` is what ended the last round (None: procrastinate stopped itself after losing a
        side task's connection). Raises ``DatabaseGaveUp`` past ``give_up_after_s``.
        """
        reason = _reason(cause)
        while not stop.is_set():
            now = time.monotonic()
            if self.down_since is None:
                self.down_since, self.outages = now, self.outages + 1
                delay = self.backoff.next_delay()
                log.warning("database unreachable, retrying in %.1f s (%s)", delay, reason)
            else:
                delay = self.backoff.next_delay()
            if self.give_up_after_s is not None and now - self.down_since >= self.give_up_after_s:
                log.error("database unreachable for %.1f s: gave up (%s)", now - self.down_since, reason)
                raise DatabaseGaveUp(
                    f"the database stayed unreachable for {now - self.down_since:.1f} s ({reason})"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=delay)
            if stop.is_set():
                break
            error = await probe(self.engine)
            if error is None:
                log.warning("reconnected to the database after %.1f s", time.monotonic() - self.down_since)
                self.down_since = None
                self.backoff.reset()
                return True
            reason = _reason(error)
        return False


def _reason(cause: BaseException | None) -> str:
    if cause is None:
        return "a worker connection was lost"
    return " ".join(db_message(cause).split())[:200] or type(cause).__name__


__all__ = ["BACKOFF_CAP_S", "Backoff", "DatabaseGaveUp", "Link"]
