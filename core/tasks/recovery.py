"""Crash recovery: tasks whose runner died while running or validating are moved on at start-up.

A task is only taken over when its runner is provably gone: same host and the process no longer
exists, or another host whose heartbeat is older than ``STALE_AFTER``. The attempt it was on is
ended as ``interrupted`` with the outcome the task is delivered with, in the same transaction as
the task's move; its evidence stays (an attempt that never wrote its packet is closed with the
packet its recorded events make, ``core.tasks.attempt_evidence``), and an event says what happened.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

from core.domain.event_payloads import RunInterruption, TaskInterruption
from core.domain.facts import AttemptState
from core.domain.records import AttemptRecord, RunRecord, TaskRecord
from core.domain.status import TaskStatus
from core.events import TasksChanged
from core.store import InterruptedRun, TaskRecovery, new_event
from core.tasks.attempt_evidence import unpacked_packets
from core.tasks.dispatch import tasks_owned_by_jobs
from core.tasks.policy import attempt_ending, interruption, is_writable, revision_fallback
from core.tasks.state_machine import Trigger, next_status
from core.workspace import Workspace

STALE_AFTER = timedelta(minutes=10)


def runner_id() -> str:
    """Who runs a task: host and process, so a later start on the same host can prove it is gone."""
    return f"{socket.gethostname()}:{os.getpid()}"


RECOVERY_BATCH = 250
"""Tasks judged and moved per write transaction.

One transaction per batch instead of five to eight per task is what makes recovering thousands of
tasks take seconds; a batch small enough that its transaction holds SQLite's write lock for tens
of milliseconds, not seconds, so live runners' heartbeats and events are not held up behind it.
"""


async def recover_interrupted(workspace: Workspace, *, batch: int = RECOVERY_BATCH) -> list[TaskRecord]:
    """Move every task whose runner is gone to needs_review or failed; one ``TasksChanged`` for all.

    Tasks are judged and moved ``batch`` at a time: their attempts and running runs are read in
    two queries, and their moves written in one transaction (``Store.recover_tasks``), each task
    by compare-and-set on its version. A task changed meanwhile (someone else recovered or resumed
    it) is skipped; a crash leaves each task either recovered or untouched.
    """
    if batch < 1:
        raise ValueError(f"a recovery batch needs at least one task, not {batch}")
    store = workspace.store
    active = [s for s in TaskStatus if s.is_execution_active]
    recovered: list[TaskRecord] = []
    # A live process on this host keeps its tasks: they are not even read (a big workspace has
    # thousands running, and reading them all cost the desk's start ~170 ms of CPU at 1M tasks).
    suspects = [r for r in await store.runners_of(active) if not _alive_here(r)]
    if not suspects:
        return recovered
    # Imported evidence is never rewritten; live runners (fresh heartbeat elsewhere) are left alone.
    orphans = [
        t
        for t in await store.list_tasks(statuses=active, runners=suspects)
        if is_writable(t) and runner_gone(t)
    ]
    # A worker's task whose job is still queued or doing has one owner, the queue: the job's retry
    # resumes it (core.workers.resume). Ending it here would fail a task a worker is about to resume.
    owned = await tasks_owned_by_jobs(store, [t.id for t in orphans]) if not store.is_sqlite else set()
    orphans = [t for t in orphans if t.id not in owned]
    for start in range(0, len(orphans), batch):
        tasks = orphans[start : start + batch]
        attempts, runs = await store.recovery_facts([t.id for t in tasks])
        # Each crashed attempt is closed with the packet its events make, in the move's own
        # transaction, so every later attempt's validator sees it under the ids it keeps (seed 002).
        current = [(t.id, a) for t in tasks if (a := current_attempt(t, attempts[t.id])) is not None]
        packets = await unpacked_packets(store, current)
        moves = [_recovery(t, attempts[t.id], runs[t.id], packets) for t in tasks]
        recovered.extend(await store.recover_tasks(moves))
    if recovered:  # one notice for the whole recovery: a desk refreshes once, not once per task
        workspace.bus.publish(TasksChanged(task_ids=tuple(t.id for t in recovered)))
    return recovered


def _recovery(
    task: TaskRecord,
    attempts: list[AttemptRecord],
    running: list[RunRecord],
    packets: dict[str, dict[str, Any]] | None = None,
) -> TaskRecovery:
    """Where ``task`` goes and what is written with it: the decision, taken from its facts alone."""
    # The attempt the task claimed, by index: a crash between the claim and the attempt's
    # record leaves none, and an earlier attempt's answer must not stand in for it.
    attempt = current_attempt(task, attempts)
    trigger, outcome = interruption(attempt)
    if trigger is Trigger.INTERRUPTED_UNUSABLE:  # a crashed revision: no dead end either
        earlier = [a for a in attempts if attempt is None or a.index < attempt.index]
        trigger, outcome = revision_fallback(TaskStatus.NEEDS_REVIEW, earlier) or (trigger, outcome)
    target = next_status(task.status, trigger)
    event = new_event(
        TaskInterruption(
            from_status=task.status,
            to_status=target,
            runner=task.runner,
            attempt_index=attempt.index if attempt is not None else task.attempt_count,
            message="the process running this task stopped; recovered at start-up",
        )
    )
    run_event = new_event(
        RunInterruption(message="the process running this run stopped before it finished", runner=task.runner)
    )
    return TaskRecovery(
        task_id=task.id,
        expected_version=task.version,
        status=target,
        validation_outcome=outcome,
        session_id=task.main_session_id,  # None: a workspace written by hand or by an older tool
        event=event,
        ending=None
        if attempt is None
        else (
            attempt.id,
            _with_packet(attempt_ending(attempt, AttemptState.INTERRUPTED, outcome), attempt, packets),
        ),
        runs=[InterruptedRun(run_id=r.id, session_id=r.session_id, event=run_event) for r in running],
    )


def _with_packet(
    ending: dict[str, Any], attempt: AttemptRecord, packets: dict[str, dict[str, Any]] | None
) -> dict[str, Any]:
    """The attempt's ending, with the packet its events make when it never wrote one."""
    packet = (packets or {}).get(attempt.id)
    return ending if packet is None else {**ending, "packet": packet}


def current_attempt(task: TaskRecord, attempts: list[AttemptRecord]) -> AttemptRecord | None:
    """The attempt the task counts as its latest; None when its record was never written."""
    return next((a for a in reversed(attempts) if a.index >= task.attempt_count), None)


def runner_gone(task: TaskRecord) -> bool:
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


__all__ = ["RECOVERY_BATCH", "STALE_AFTER", "recover_interrupted", "runner_id"]
