"""Who is reviewing which task: leases that keep two analysts off the same task.

Opening a task for review claims it for ``DEFAULT_LEASE``; the desk renews the lease while the
task stays open and releases it on moving away. A desk that dies lets the lease run out, so a
task is never stuck with a reviewer who is gone. Releasing and taking over are recorded as
events in the task's log (who, from whom, when); plain claims and renewals are not, because they
happen every few minutes and say nothing about the task.

Time comes from an injected clock so expiry is tested without waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from core.domain.claims import ClaimRecord
from core.domain.event_payloads import ClaimRelease, ClaimTakeover
from core.domain.queue import QueueFilter
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.errors import RefusedAction
from core.store import Store, new_event
from core.tasks.policy import ensure_writable, is_writable

DEFAULT_LEASE = timedelta(minutes=5)
RENEW_EVERY = timedelta(minutes=1)  # how often a desk renews the lease of the task it shows


class ClaimHeld(RefusedAction):
    """Someone else holds the task; taking it over needs the analyst's confirmation."""

    def __init__(self, claim: ClaimRecord) -> None:
        self.claim = claim
        super().__init__(
            f"task {claim.task_id[:8]} is {claim.describe()}; take it over to review it yourself"
        )


def utc_now() -> datetime:
    return datetime.now(UTC)


class Claims:
    """The claim API every front end uses (desk, command line, tests)."""

    def __init__(self, store: Store, *, clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self._clock = clock

    def now(self) -> datetime:
        return self._clock().astimezone(UTC)

    async def claim(self, task_id: str, reviewer: str, lease: timedelta = DEFAULT_LEASE) -> ClaimRecord:
        """Claim the task, or renew ``reviewer``'s claim; raises ``ClaimHeld`` if someone else has it."""
        task = await self.store.get_task(task_id)  # accepts a short id prefix
        ensure_writable(task)  # an imported task's log is signed evidence: nothing appends to it
        now = self.now()
        claim, _ = await self.store.put_claim(task.id, reviewer, now=now, expires_at=now + lease)
        if claim.reviewer != reviewer:
            raise ClaimHeld(claim)
        return claim

    async def renew(self, task_id: str, reviewer: str, lease: timedelta = DEFAULT_LEASE) -> ClaimRecord:
        """Extend ``reviewer``'s lease. A lease that ran out is taken again if still free."""
        return await self.claim(task_id, reviewer, lease)

    async def release(self, task_id: str, reviewer: str, *, record: bool = True) -> bool:
        """Let go of the task; False (and nothing recorded) when ``reviewer`` held no claim.

        ``record=False`` is the desk moving on to another task: that ends the lease early, as
        closing the desk would let it lapse, and would fill the log with one event per click.
        """
        task = await self.store.get_task(task_id)
        if not is_writable(task):
            if record:  # asked for by name (the command line): say why nothing happens
                ensure_writable(task)
            return False  # the desk moving on from a task nobody can claim
        now = self.now()
        event = new_event(ClaimRelease(reviewer=reviewer, time=now))
        return await self.store.delete_claim(task.id, reviewer, event=event if record else None)

    async def take_over(
        self, task_id: str, reviewer: str, *, confirm: bool, lease: timedelta = DEFAULT_LEASE
    ) -> ClaimRecord:
        """Take the task from whoever holds it: the analyst must have confirmed (``confirm``).

        Without confirmation a held task raises ``ClaimHeld`` (what the desk turns into the
        question); a free task is simply claimed and nothing is recorded.
        """
        if not confirm:
            return await self.claim(task_id, reviewer, lease)
        task = await self.store.get_task(task_id)
        ensure_writable(task)
        now = self.now()
        holder = await self.store.get_claim(task.id, now)
        event = new_event(
            ClaimTakeover(
                reviewer=reviewer,
                from_reviewer=holder.reviewer if holder else None,
                from_expires_at=holder.expires_at if holder else None,
                time=now,
            )
        )
        claim, _ = await self.store.put_claim(
            task.id, reviewer, now=now, expires_at=now + lease, force=True, event=event
        )
        return claim

    async def next_unclaimed(
        self,
        reviewer: str,
        flt: QueueFilter | None = None,
        *,
        lease: timedelta = DEFAULT_LEASE,
    ) -> TaskRecord | None:
        """Claim and return the oldest task awaiting review that nobody holds (None when none).

        The filter narrows the candidates as it narrows the queue; its status, when set, replaces
        the default of needs-review tasks.
        """
        flt = flt or QueueFilter()
        statuses: Sequence[TaskStatus] = (flt.status,) if flt.status else (TaskStatus.NEEDS_REVIEW,)
        now = self.now()
        return await self.store.claim_next(
            reviewer, flt=flt, statuses=statuses, now=now, expires_at=now + lease
        )

    async def holder(self, task_id: str) -> ClaimRecord | None:
        return await self.store.get_claim(task_id, self.now())

    async def for_tasks(self, task_ids: Sequence[str]) -> dict[str, ClaimRecord]:
        """Claims in force on these tasks: what the queue marks."""
        return await self.store.claims_for(task_ids, self.now())

    async def assigned(self, reviewer: str | None = None) -> list[ClaimRecord]:
        """Claims in force, of one reviewer or of everyone: a queue per reviewer."""
        return await self.store.list_claims(self.now(), reviewer=reviewer)


__all__ = ["DEFAULT_LEASE", "RENEW_EVERY", "ClaimHeld", "Claims", "utc_now"]
