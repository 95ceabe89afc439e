"""Crash recovery ends the attempt it finds, with the task's move, whatever version wrote the workspace."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta
from typing import Any

from core.domain import TaskStatus, ValidationOutcome
from core.domain.facts import AttemptState, FinishReason
from core.events import BusEvent, TaskChanged, TasksChanged
from core.evidence import build_run_evidence
from core.tasks.dossier import load_dossier
from core.tasks.recovery import STALE_AFTER, recover_interrupted
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory

DEAD_HERE = f"{socket.gethostname()}:{2**22 + 7}"  # this host, a pid no process has
FORCE = ValidationOutcome.FORCE_ACCEPTED


async def open_ws(make_settings: ScriptFactory, db_url: str) -> Workspace:
    return await Workspace.open(
        make_settings([{"model": "agent", "turns": [{"content": "x"}]}], db_url=db_url)
    )


async def crashed_task(
    ws: Workspace,
    *,
    status: TaskStatus = TaskStatus.RUNNING,
    attempts: int = 1,
    runner: str = DEAD_HERE,
    **task: Any,
) -> str:
    """A task as a killed runner leaves it: claimed, its attempt running, no outcome recorded anywhere."""
    t = await ws.store.create_task("A question?")
    await ws.store.update_task(t.id, status=status, runner=runner, attempt_count=attempts, **task)
    await ws.store.create_attempt(t.id, attempts, trigger="initial", prompt="p")
    return t.id


async def test_a_running_attempt_with_no_recorded_outcome_is_ended_with_the_task(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws = await open_ws(make_settings, db_url)
    # Killed while validating: the run had ended and its answer was stored, the verdict was not.
    task_id = await crashed_task(ws, status=TaskStatus.VALIDATING)
    [a] = await ws.store.list_attempts(task_id)
    await ws.store.update_attempt(a.id, final_output="an answer", finish_reason=FinishReason.STOP)
    [recovered] = await recover_interrupted(ws)
    d = await load_dossier(ws.store, task_id)
    assert (recovered.status, d.task.validation_outcome, d.task.runner) == (
        TaskStatus.NEEDS_REVIEW,
        FORCE,
        None,
    )
    [a] = d.attempts
    assert (a.state, a.validation_outcome, a.finish_reason) == (AttemptState.INTERRUPTED, FORCE, "stop")
    assert a.finished_at is not None
    assert d.attempt_interrupted(a) and d.attempt_force_accepted(a)
    [event] = [e for e in d.events if e.kind == "task_interrupted"]
    assert event.payload["attempt_index"] == 1 and event.payload["to"] == "needs_review"
    await ws.close()


async def test_a_stale_runner_on_another_host_is_taken_over(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws = await open_ws(make_settings, db_url)
    old = datetime.now(UTC) - STALE_AFTER - timedelta(minutes=1)
    task_id = await crashed_task(ws, runner="elsewhere.example:123", heartbeat_at=old)
    fresh_id = await crashed_task(ws, runner="elsewhere.example:456", heartbeat_at=datetime.now(UTC))
    assert [t.id for t in await recover_interrupted(ws)] == [task_id]
    [a] = await ws.store.list_attempts(task_id)
    assert (a.state, a.validation_outcome, a.finish_reason) == (AttemptState.INTERRUPTED, None, "interrupted")
    assert (await ws.store.get_task(task_id)).status is TaskStatus.FAILED
    [live] = await ws.store.list_attempts(fresh_id)  # its runner may still be alive: untouched
    assert live.state is AttemptState.RUNNING
    await ws.close()


async def test_a_missing_attempt_record_returns_the_earlier_answer_and_leaves_its_attempt_alone(
    make_settings: ScriptFactory, db_url: str
) -> None:
    """Killed between claiming attempt 2 and writing its record: attempt 1's record is not rewritten to
    stand in for attempt 2, but its answer is what the task goes back to review with (issue 15: a
    crashed revision is no dead end)."""
    ws = await open_ws(make_settings, db_url)
    task_id = await crashed_task(ws)
    [first] = await ws.store.list_attempts(task_id)
    ended = datetime.now(UTC)
    await ws.store.update_attempt(
        first.id, state=AttemptState.FINISHED, finished_at=ended, final_output="old answer"
    )
    await ws.store.update_task(task_id, attempt_count=2)
    [recovered] = await recover_interrupted(ws)
    assert (recovered.status, recovered.validation_outcome) == (TaskStatus.NEEDS_REVIEW, FORCE)
    [first] = await ws.store.list_attempts(task_id)
    assert (first.state, first.validation_outcome, first.final_output) == (
        AttemptState.FINISHED,
        None,
        "old answer",
    )
    d = await load_dossier(ws.store, task_id)
    [event] = [e for e in d.events if e.kind == "task_interrupted"]
    assert event.payload["attempt_index"] == 2
    await ws.close()


async def test_an_attempt_that_already_ended_keeps_its_state_and_takes_the_tasks_outcome(
    make_settings: ScriptFactory, db_url: str
) -> None:
    """Cancelled at shutdown (the task stays running for recovery), then recovered at the next start."""
    ws = await open_ws(make_settings, db_url)
    task_id = await crashed_task(ws)
    [a] = await ws.store.list_attempts(task_id)
    await ws.store.update_attempt(
        a.id, state=AttemptState.CANCELLED, finished_at=datetime.now(UTC), final_output="partial answer"
    )
    [recovered] = await recover_interrupted(ws)
    [a] = await ws.store.list_attempts(task_id)
    assert (recovered.status, recovered.validation_outcome) == (TaskStatus.NEEDS_REVIEW, FORCE)
    assert (a.state, a.validation_outcome) == (AttemptState.CANCELLED, FORCE)
    await ws.close()


async def test_recovery_is_one_batch_and_marks_open_runs_interrupted(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws = await open_ws(make_settings, db_url)
    ids = [await crashed_task(ws), await crashed_task(ws, status=TaskStatus.VALIDATING)]
    task = await ws.store.get_task(ids[0])
    assert task.main_session_id is not None
    run = await ws.store.create_run(
        session_id=task.main_session_id,
        kind="agent",
        model="scripted/agent",
        task_id=task.id,
        attempt_id=None,
    )
    seen: list[BusEvent] = []
    ws.bus.subscribe(seen.append)
    recovered = await recover_interrupted(ws)
    assert sorted(t.id for t in recovered) == sorted(ids)
    notices = [e for e in seen if isinstance(e, TasksChanged | TaskChanged)]
    assert notices == [TasksChanged(task_ids=tuple(t.id for t in recovered))]
    assert (await ws.store.get_run(run.id)).finish_reason == "interrupted"
    evidence = await build_run_evidence(ws.store, task.main_session_id, run.id)
    assert evidence.finish_reason == FinishReason.INTERRUPTED
    assert evidence.warnings == ["the process running this run stopped before it finished"]
    assert await recover_interrupted(ws) == []  # nothing left to recover: a second start is a no-op
    await ws.close()


async def test_tasks_of_a_live_runner_here_are_left_unread_and_the_rest_judged(
    make_settings: ScriptFactory, db_url: str
) -> None:
    """A big workspace's thousands of running tasks, run by live processes, cost one small query."""
    from core.tasks.recovery import runner_id

    ws = await open_ws(make_settings, db_url)
    live = [await crashed_task(ws, runner=runner_id()) for _ in range(3)]
    dead = await crashed_task(ws)
    unclaimed = await crashed_task(ws, runner=None)
    fresh_elsewhere = await crashed_task(ws, runner="elsewhere:1", heartbeat_at=datetime.now(UTC))
    assert sorted(await ws.store.runners_of([TaskStatus.RUNNING]), key=str) == sorted(
        [None, DEAD_HERE, runner_id(), "elsewhere:1"], key=str
    )
    read: list[str] = []
    listing = ws.store.list_tasks

    async def list_tasks(**kw: Any) -> list[Any]:
        found = await listing(**kw)
        read.extend(t.id for t in found)
        return found

    ws.store.list_tasks = list_tasks  # type: ignore[method-assign]
    recovered = await recover_interrupted(ws)
    assert sorted(read) == sorted([dead, unclaimed, fresh_elsewhere])  # the live runner's: never read
    assert sorted(t.id for t in recovered) == sorted([dead, unclaimed])
    for task_id in [*live, fresh_elsewhere]:
        assert (await ws.store.get_task(task_id)).status is TaskStatus.RUNNING
    await ws.close()


async def test_nothing_running_means_nothing_read(make_settings: ScriptFactory, db_url: str) -> None:
    ws = await open_ws(make_settings, db_url)
    await ws.store.create_task("A question?")
    assert await ws.store.runners_of([TaskStatus.RUNNING, TaskStatus.VALIDATING]) == []
    assert await recover_interrupted(ws) == []
    await ws.close()
