"""Crash recovery: tasks whose runner died while running or validating are moved on at start-up.

A task is only taken over when its runner is provably gone: same host and the process no longer
exists, or another host whose heartbeat is older than ``STALE_AFTER``. The attempt it was on is
ended as ``interrupted`` with the outcome the task is delivered with, in the same transaction as
the task's move; its evidence stays, and an event says what happened.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

from core.domain.facts import AttemptState, EventKind, FinishReason
from core.domain.records import AttemptRecord, TaskRecord
from core.domain.status import TaskStatus
from core.errors import VersionConflict
from core.events import TasksChanged
from core.store import NewEvent
from core.tasks.policy import attempt_ending, interruption, is_writable, revision_fallback
from core.tasks.state_machine import Trigger, next_status
from core.workspace import Workspace

STALE_AFTER = timedelta(minutes=10)


def runner_id() -> str:
    """Who runs a task: host and process, so a later start on the same host can prove it is gone."""
    return f"{socket.gethostname()}:{os.getpid()}"


async def recover_interrupted(workspace: Workspace) -> list[TaskRecord]:
    """Move every task whose runner is gone to needs_review or failed; one ``TasksChanged`` for all."""
    store = workspace.store
    active = [s for s in TaskStatus if s.is_execution_active]
    recovered: list[TaskRecord] = []
    # A live process on this host keeps its tasks: they are not even read (a big workspace has
    # thousands running, and reading them all cost the desk's start ~170 ms of CPU at 1M tasks).
    # Every other runner's tasks are read and judged one by one, as before.
    suspects = [r for r in await store.runners_of(active) if not _alive_here(r)]
    if not suspects:
        return recovered
    for task in await store.list_tasks(statuses=active, runners=suspects):
        if not is_writable(task) or not _runner_gone(task):
            continue  # imported evidence is never rewritten; live runners are left alone
        # The attempt the task claimed, by index: a crash between the claim and the attempt's
        # record leaves none, and an earlier attempt's answer must not stand in for it.
        attempts = await store.list_attempts(task.id, resolve=False)  # states and answers only
        attempt = _current_attempt(task, attempts)
        trigger, outcome = interruption(attempt)
        if trigger is Trigger.INTERRUPTED_UNUSABLE:  # a crashed revision: no dead end either
            earlier = [a for a in attempts if attempt is None or a.index < attempt.index]
            trigger, outcome = revision_fallback(TaskStatus.NEEDS_REVIEW, earlier) or (trigger, outcome)
        target = next_status(task.status, trigger)
        for run in await store.list_runs(task_id=task.id):
            if run.state == "running":
                await store.append_event(
                    run.session_id,
                    EventKind.RUN_INTERRUPTED,
                    {
                        "message": "the process running this run stopped before it finished",
                        "runner": task.runner,
                    },
                    run_id=run.id,
                    task_id=task.id,
                )
                await store.finish_run(run.id, finish_reason=FinishReason.INTERRUPTED, output_text="")
        session_id = task.main_session_id
        if session_id is None:  # a workspace written by hand or by an older tool
            session_id = (await store.create_session(task_id=task.id, kind="main", label="main")).id
        event = NewEvent(
            kind=EventKind.TASK_INTERRUPTED,
            payload={
                "from": task.status.value,
                "to": target.value,
                "runner": task.runner,
                "attempt_index": attempt.index if attempt is not None else task.attempt_count,
                "message": "the process running this task stopped; recovered at start-up",
            },
        )
        fields: dict[str, Any] = {
            "expected_version": task.version,
            "event": (session_id, event),
            "status": target,
            "runner": None,
            "main_session_id": session_id,
            "validation_outcome": outcome,
        }
        try:
            if attempt is None:
                updated = await store.update_task(task.id, **fields)
            else:
                ending = attempt_ending(attempt, AttemptState.INTERRUPTED, outcome)
                updated = await store.update_task(task.id, ending=(attempt.id, ending), **fields)
        except VersionConflict:
            continue  # someone else recovered or resumed it meanwhile
        recovered.append(updated)
    if recovered:  # one notice for the whole batch: a desk refreshes once, not once per task
        workspace.bus.publish(TasksChanged(task_ids=tuple(t.id for t in recovered)))
    return recovered


def _current_attempt(task: TaskRecord, attempts: list[AttemptRecord]) -> AttemptRecord | None:
    """The attempt the task counts as its latest; None when its record was never written."""
    return next((a for a in reversed(attempts) if a.index >= task.attempt_count), None)


def _runner_gone(task: TaskRecord) -> bool:
    if not task.runner:
        return True
    if _on_this_host(task.runner):
        return not _alive_here(task.runner)
    beat = task.heartbeat_at or task.updated_at
    return datetime.now(UTC) - beat > STALE_AFTER


def _on_this_host(runner: str) -> bool:
    return runner.rpartition(":")[0] == socket.gethostname()


def _alive_here(runner: str | None) -> bool:
    """A runner on this host whose process is alive (this one included); anything else is False."""
    if not runner or not _on_this_host(runner):
        return False
    try:
        pid = int(runner.rpartition(":")[2])
    except ValueError:
        return False
    return pid == os.getpid() or _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["STALE_AFTER", "recover_interrupted", "runner_id"]
