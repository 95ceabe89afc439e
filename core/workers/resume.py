"""A dead worker's task goes back to the queue, ended by crash recovery's own rules.

Crash recovery (``core.tasks.recovery``) delivers an interrupted task for review because nobody
will run it again. Under a job queue somebody will: procrastinate retries the job of a worker
that stopped sending heartbeats. So the attempt and its runs end exactly as recovery ends them
(``run_interrupted`` events, the attempt ``interrupted`` with recovery's outcome, in the same
transaction as the task's move), but the task moves to ``needs_revision`` carrying the
interrupted attempt's prompt, and the retried job starts the next attempt in the same session.
The attempt keeps the evidence packet its events make (``core.tasks.attempt_evidence``).
Event sequences stay contiguous because every write goes through the one event log.
"""

from __future__ import annotations

from typing import Any

from core.domain.event_codec import encode
from core.domain.event_payloads import RunInterruption, StatusChange
from core.domain.facts import AttemptState, FinishReason, RevisionRequester
from core.domain.records import TaskRecord
from core.errors import VersionConflict
from core.store import new_event
from core.tasks.attempt_evidence import unpacked_packets
from core.tasks.policy import attempt_ending, interruption, is_writable
from core.tasks.recovery import current_attempt
from core.tasks.state_machine import Trigger, next_status
from core.workspace import Workspace


async def resume_interrupted(ws: Workspace, task: TaskRecord, *, why: str) -> TaskRecord | None:
    """End the dead runner's attempt and queue the task again; None if someone else moved it first."""
    store = ws.store
    if not is_writable(task) or not task.status.is_execution_active or task.main_session_id is None:
        return None
    attempt = current_attempt(task, await store.list_attempts(task.id, resolve=False))
    _, outcome = interruption(attempt)
    # The dead runner's attempt is closed with the packet its events make, in the move's own
    # transaction (as crash recovery does), so the next attempt's validator sees its evidence.
    packets = await unpacked_packets(store, [(task.id, attempt)]) if attempt is not None else {}
    for run in await store.list_runs(task_id=task.id):
        if run.state == "running":
            await store.append_event(
                run.session_id,
                *encode(
                    RunInterruption(
                        message="the worker running this run stopped before it finished", runner=task.runner
                    )
                ),
                run_id=run.id,
                task_id=task.id,
            )
            await store.finish_run(run.id, finish_reason=FinishReason.INTERRUPTED, output_text="")
    target = next_status(task.status, Trigger.INTERRUPTED_RESUME)
    prompt = attempt.prompt if attempt is not None else None
    event = new_event(
        StatusChange(
            from_status=task.status,
            to_status=target,
            trigger=Trigger.INTERRUPTED_RESUME.value,
            attempt_index=attempt.index if attempt is not None else task.attempt_count,
            reason=why,
            runner=task.runner,
            validation_outcome=None,
            next_prompt=prompt or None,
        )
    )
    fields: dict[str, Any] = {
        "expected_version": task.version,
        "event": (task.main_session_id, event),
        "status": target,
        "runner": None,
        "revision_requested_by": RevisionRequester.VALIDATOR,  # queued automatically, no analyst waits
        "validation_outcome": None,
    }
    try:
        if attempt is None:
            return await store.update_task(task.id, **fields)
        ending = attempt_ending(attempt, AttemptState.INTERRUPTED, outcome)
        if attempt.id in packets:
            ending = {**ending, "packet": packets[attempt.id]}
        return await store.update_task(task.id, ending=(attempt.id, ending), **fields)
    except VersionConflict:
        return None
