"""Following a task handed to the team's workers: was it queued, and waiting for it to rest.

With a worker alive, ``run`` and ``feedback revise`` queue the run instead of running it here
(``dispatch.should_defer``, asked before the run), and the command used to end at once with
status ``open`` and no word of where the work went. Now it says so (``queued_line``), and
``wait_until_resting`` backs its ``--wait``: it reads the task until a worker moved it on from
the version it was queued at and it rests.
"""

from __future__ import annotations

import asyncio

from core.domain.facts import RevisionRequester
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.workspace import Workspace

WAIT_POLL_S = 1.0


def waiting_for_a_runner(task: TaskRecord) -> bool:
    """Not resting: queued, running, or an automatic retry waiting for its run."""
    return (
        task.status is TaskStatus.OPEN
        or task.status.is_execution_active
        or (
            task.status is TaskStatus.NEEDS_REVISION
            and task.revision_requested_by is not RevisionRequester.ANALYST
        )
    )


async def wait_for_runner(ws: Workspace) -> bool:
    """Will ``TaskService.run`` queue the run for a worker rather than run it here?"""
    from core.tasks.dispatch import should_defer

    return await should_defer(ws)


async def wait_until_resting(ws: Workspace, queued: TaskRecord, *, poll_s: float = WAIT_POLL_S) -> TaskRecord:
    """Read the task every ``poll_s`` seconds until a worker moved it past ``queued`` and it rests."""
    while True:
        task = await ws.store.get_task(queued.id)
        if task.version > queued.version and not waiting_for_a_runner(task):
            return task
        await asyncio.sleep(poll_s)


def queued_line(task_id: str) -> str:
    return (
        f"task {task_id} queued for the team's workers; follow it with `evidence-desk show {task_id}`, "
        "or add --wait to wait for its resting status"
    )


__all__ = ["queued_line", "wait_for_runner", "wait_until_resting", "waiting_for_a_runner"]
