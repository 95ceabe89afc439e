"""Crash recovery of many tasks in batches: the per-task decisions, a bounded number of write
transactions, and a batch that is atomic even when its process is SIGKILLed inside it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from core.domain import TaskStatus, ValidationOutcome
from core.domain.facts import AttemptState, FinishReason
from core.events import BusEvent, TasksChanged
from core.store import AttemptRecord, RunRecord
from core.tasks.recovery import recover_interrupted, runner_id
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory
from tests.core.test_recovery import DEAD_HERE, crashed_task, open_ws

REPO = Path(__file__).resolve().parents[2]
FORCE = ValidationOutcome.FORCE_ACCEPTED
ACCEPTED = ValidationOutcome.ACCEPTED


def write_engines(ws: Workspace) -> list[Any]:
    """Every engine the store writes through: its write engine and, on SQLite, the worker thread's."""
    thread_engine = ws.store._thread_engine
    return [ws.store.write_engine.sync_engine, *([thread_engine] if thread_engine is not None else [])]


def count_commits(ws: Workspace) -> list[int]:
    """Every transaction committed by the store from now on (reads never commit)."""
    seen = [0]

    def on_commit(_conn: Any) -> None:
        seen[0] += 1

    for engine in write_engines(ws):
        event.listen(engine, "commit", on_commit)
    return seen


async def answered(ws: Workspace, task_id: str, answer: str = "an answer") -> AttemptRecord:
    [a] = await ws.store.list_attempts(task_id)
    await ws.store.update_attempt(a.id, final_output=answer, finish_reason=FinishReason.STOP)
    return a


async def running_run(ws: Workspace, task_id: str, session_id: str | None = None) -> RunRecord:
    task = await ws.store.get_task(task_id)
    session = session_id or task.main_session_id
    assert session is not None
    return await ws.store.create_run(
        session_id=session, kind="agent", model="scripted/agent", task_id=task_id
    )


async def kinds(ws: Workspace, task_id: str, kind: str) -> list[dict[str, Any]]:
    return [e.payload for e in await ws.store.get_task_events(task_id) if e.kind == kind]


async def test_mixed_dead_tasks_get_each_situations_end_state_in_one_transaction_per_batch(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws = await open_ws(make_settings, db_url)
    plain = [await crashed_task(ws, status=TaskStatus.VALIDATING) for _ in range(7)]
    for task_id in plain:
        await answered(ws, task_id)
    no_record = await crashed_task(ws, attempts=2)  # claimed attempt 2, died before its record
    [first] = await ws.store.list_attempts(no_record)
    await ws.store.update_task(no_record, attempt_count=3)  # attempt 2 and 3's records: never written
    # A crashed revision: attempt 1 was accepted, attempt 2 died without an answer.
    revision = await crashed_task(ws)
    [accepted] = await ws.store.list_attempts(revision)
    await ws.store.update_attempt(
        accepted.id,
        state=AttemptState.FINISHED,
        finished_at=datetime.now(UTC),
        final_output="the accepted answer",
        validation_outcome=ACCEPTED,
    )
    await ws.store.update_task(revision, attempt_count=2)
    revising = await ws.store.create_attempt(revision, 2, trigger="revision", prompt="p")
    # Two runs left running (one in a team node's session), one finished before the crash.
    with_runs = await crashed_task(ws)
    await answered(ws, with_runs)
    node_session = await ws.store.create_session(task_id=None, kind="node", label="critic")
    open_runs = [await running_run(ws, with_runs), await running_run(ws, with_runs, node_session.id)]
    done_run = await running_run(ws, with_runs)
    await ws.store.finish_run(done_run.id, finish_reason=FinishReason.STOP, output_text="ok")
    no_session = await crashed_task(ws)  # written by an older tool: no main session
    old_session = (await ws.store.get_task(no_session)).main_session_id
    await ws.store.update_task(no_session, main_session_id=None)
    racing = await crashed_task(ws)  # someone resumes it after recovery read it
    racing_run = await running_run(ws, racing)
    imported = await crashed_task(ws, read_only=True)
    live = await crashed_task(ws, runner=runner_id())

    facts = ws.store.recovery_facts

    async def resumed_meanwhile(task_ids: Sequence[str]) -> Any:
        found = await facts(task_ids)
        if racing in task_ids:  # another desk resumes it between recovery's read and its write
            await ws.store.update_task(racing, status=TaskStatus.OPEN, runner=None)
        return found

    ws.store.recovery_facts = resumed_meanwhile  # type: ignore[method-assign]
    seen: list[BusEvent] = []
    ws.bus.subscribe(seen.append)
    commits = count_commits(ws)
    recovered = await recover_interrupted(ws, batch=4)

    dead = [*plain, no_record, revision, with_runs, no_session, racing]
    batches = -(-len(dead) // 4)
    assert commits[0] == batches + 1  # one per batch, plus the resuming desk's own write
    assert sorted(t.id for t in recovered) == sorted(set(dead) - {racing})
    assert seen == [TasksChanged(task_ids=tuple(t.id for t in recovered))]
    moved = {t.id: (t.status, t.validation_outcome, t.runner) for t in recovered}
    for task_id in plain:
        assert moved[task_id] == (TaskStatus.NEEDS_REVIEW, FORCE, None)
        [a] = await ws.store.list_attempts(task_id)
        assert (a.state, a.validation_outcome, a.finish_reason) == (AttemptState.INTERRUPTED, FORCE, "stop")
        [payload] = await kinds(ws, task_id, "task_interrupted")
        assert (payload["from"], payload["to"], payload["attempt_index"], payload["runner"]) == (
            "validating",
            "needs_review",
            1,
            DEAD_HERE,
        )

    # No record of the attempt it claimed: attempt 2's record is not rewritten; no answer: failed.
    assert moved[no_record] == (TaskStatus.FAILED, None, None)
    assert await ws.store.list_attempts(no_record) == [first]
    [payload] = await kinds(ws, no_record, "task_interrupted")
    assert (payload["to"], payload["attempt_index"]) == ("failed", 3)

    # The crashed revision goes back to review with the accepted answer and its outcome.
    assert moved[revision] == (TaskStatus.NEEDS_REVIEW, ACCEPTED, None)
    old, new = await ws.store.list_attempts(revision)
    assert (old.state, old.validation_outcome) == (AttemptState.FINISHED, ACCEPTED)
    assert (new.id, new.state, new.validation_outcome, new.finish_reason) == (
        revising.id,
        AttemptState.INTERRUPTED,
        ACCEPTED,
        "interrupted",
    )

    assert moved[with_runs] == (TaskStatus.NEEDS_REVIEW, FORCE, None)
    for run in open_runs:
        stored = await ws.store.get_run(run.id)
        assert (stored.state, stored.finish_reason, stored.output_text) == ("finished", "interrupted", "")
    finished = await ws.store.get_run(done_run.id)
    assert (finished.finish_reason, finished.output_text) == ("stop", "ok")  # ended before: untouched
    events = await ws.store.get_task_events(with_runs)
    run_events = [e for e in events if e.kind == "run_interrupted"]
    assert sorted((e.run_id, e.session_id) for e in run_events) == sorted(
        (r.id, r.session_id) for r in open_runs
    )
    [main_run_event] = [e for e in run_events if e.session_id != node_session.id]
    [task_event] = [e for e in events if e.kind == "task_interrupted"]
    assert main_run_event.seq < task_event.seq  # the runs' ends come first in the log, as before

    task = await ws.store.get_task(no_session)
    assert task.main_session_id is not None and task.status is TaskStatus.FAILED
    [session] = [s for s in await ws.store.list_sessions(no_session) if s.id != old_session]
    assert (session.id, session.kind) == (task.main_session_id, "main")
    [task_event] = await ws.store.get_session_events(session.id)
    assert (task_event.kind, task_event.seq) == ("task_interrupted", 1)

    # Changed meanwhile: left wholly as the other desk left it, its run included.
    racer = await ws.store.get_task(racing)
    assert (racer.status, racer.runner) == (TaskStatus.OPEN, None)
    assert (await ws.store.get_run(racing_run.id)).state == "running"
    assert [e for e in await ws.store.get_task_events(racing) if "interrupted" in e.kind] == []
    [a] = await ws.store.list_attempts(racing)
    assert a.state is AttemptState.RUNNING

    for untouched in (imported, live):
        t = await ws.store.get_task(untouched)
        assert t.status is TaskStatus.RUNNING and t.runner is not None
        [a] = await ws.store.list_attempts(untouched)
        assert a.state is AttemptState.RUNNING
    assert await recover_interrupted(ws) == []
    await ws.close()


async def test_the_default_batch_writes_many_tasks_in_one_transaction(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws = await open_ws(make_settings, db_url)
    dead = [await crashed_task(ws) for _ in range(30)]
    commits = count_commits(ws)
    recovered = await recover_interrupted(ws)
    assert commits[0] == 1
    assert sorted(t.id for t in recovered) == sorted(dead)
    assert {t.status for t in recovered} == {TaskStatus.FAILED}
    await ws.close()


async def test_a_batch_needs_a_task(make_settings: ScriptFactory, db_url: str) -> None:
    ws = await open_ws(make_settings, db_url)
    with pytest.raises(ValueError, match="at least one task"):
        await recover_interrupted(ws, batch=0)
    await ws.close()


# Recovers in batches of 3 and SIGKILLs itself as its second batch is about to commit: every
# statement of that batch has run, none is committed.
_KILLED_IN_SECOND_BATCH = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from sqlalchemy import event
    from core.config import load_settings
    from core.tasks.recovery import recover_interrupted
    from core.workspace import Workspace

    async def main(url: str) -> None:
        ws = await Workspace.open(load_settings(db_url=url))
        commits = [0]

        def on_commit(_conn):
            commits[0] += 1
            if commits[0] == 2:
                os.kill(os.getpid(), signal.SIGKILL)

        engines = [ws.store.write_engine.sync_engine, ws.store._thread_engine]
        for engine in [e for e in engines if e is not None]:
            event.listen(engine, "commit", on_commit)
        await recover_interrupted(ws, batch=3)

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_a_process_killed_inside_a_batch_leaves_each_task_recovered_or_untouched(
    make_settings: ScriptFactory, db_url: str, tmp_path: Path
) -> None:
    ws = await open_ws(make_settings, db_url)
    dead = [await crashed_task(ws, status=TaskStatus.VALIDATING) for _ in range(8)]
    runs = {}
    for task_id in dead:
        await answered(ws, task_id)
        runs[task_id] = await running_run(ws, task_id)
    await ws.close()

    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _KILLED_IN_SECOND_BATCH, db_url, env=env, cwd=tmp_path
    )
    assert await child.wait() == -signal.SIGKILL

    ws = await open_ws(make_settings, db_url)

    async def state(task_id: str) -> tuple[object, ...]:
        [a] = await ws.store.list_attempts(task_id)
        events = await ws.store.get_task_events(task_id)
        return (
            (await ws.store.get_task(task_id)).status,
            a.state,
            (await ws.store.get_run(runs[task_id].id)).state,
            sorted(e.kind for e in events if "interrupted" in e.kind),
        )

    recovered = (
        TaskStatus.NEEDS_REVIEW,
        AttemptState.INTERRUPTED,
        "finished",
        ["run_interrupted", "task_interrupted"],
    )
    untouched = (TaskStatus.VALIDATING, AttemptState.RUNNING, "running", [])
    states = [await state(t) for t in dead]
    assert sorted(states, key=str) == sorted([recovered] * 3 + [untouched] * 5, key=str)
    assert len(await recover_interrupted(ws)) == 5  # the next start recovers the rest
    assert [await state(t) for t in dead] == [recovered] * 8
    await ws.close()
