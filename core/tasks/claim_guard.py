"""Decisions respect claims: a reviewer does not decide on a task a colleague holds.

The desk claims a task when it is opened, so a decision there is always its holder's. A decision
from the command line (``feedback``, ``reopen``, ``undo``, ``override``) goes through
``decision_claim``: it claims the task for the moment of the decision (the same compare-and-set
the desk uses, so a desk opening the task at that instant either wins or waits its turn), and
refuses, naming the holder and when the lease ends, when someone else holds it. ``take_over``
is the analyst's confirmation: the take-over is recorded as on the desk (``claim_taken_over``)
and the claim stays with the new holder, as it would after taking over on the desk. A claim made
only for the decision is released afterwards without an event (it said nothing about the task).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from core.domain.claims import ClaimRecord
from core.errors import RefusedAction
from core.store import Store
from core.tasks.claims import ClaimHeld, Claims

__all__ = ["ClaimedByOther", "decision_claim"]


class ClaimedByOther(RefusedAction):
    """Someone else holds the task; the decision needs ``--take-over`` (the confirmation)."""

    def __init__(self, claim: ClaimRecord) -> None:
        self.claim = claim
        super().__init__(
            f"task {claim.task_id[:8]} is {claim.describe()} (lease ends {claim.expires_at.isoformat()}); "
            "pass --take-over to take it over (recorded) and decide"
        )


@asynccontextmanager
async def decision_claim(
    store: Store, task_id: str, reviewer: str, *, take_over: bool = False
) -> AsyncIterator[ClaimRecord]:
    """Hold the task's claim for ``reviewer`` while the decision is written."""
    claims = Claims(store)
    task = await store.get_task(task_id)  # accepts a short id prefix
    before = await claims.holder(task.id)
    if before is not None and before.reviewer != reviewer:
        if not take_over:
            raise ClaimedByOther(before)
        claim = await claims.take_over(task.id, reviewer, confirm=True)
    else:
        try:
            claim = await claims.claim(task.id, reviewer)  # renews a claim the reviewer held
        except ClaimHeld as exc:  # taken between the look and the claim
            if not take_over:
                raise ClaimedByOther(exc.claim) from None
            claim = await claims.take_over(task.id, reviewer, confirm=True)
            before = exc.claim
    try:
        yield claim
    finally:
        if before is None:  # claimed only for this decision
            await claims.release(task.id, reviewer, record=False)
