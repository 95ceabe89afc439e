"""Workers: queued tasks run on ``evidence-desk worker`` processes (procrastinate on PostgreSQL).

Ordering is proven by what the database says, never by sleeping: the tests wait on the worker
processes themselves (``wait`` with a generous bound) or poll the task's recorded state.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import ProgrammingError

from core.cli.main import main as cli_main
from tests.team.conftest import (
    VERDICT_CITING_E1,
    assert_event_sequences_contiguous,
    sync_rows,
    worker_process,
    write_jsonl,
    write_script,
)
from tests.zygote import ZygoteProcess

TASKS = 60
WORKERS = 3


def _batch(
    db_url: str, rows: int, tmp_path: Path, script: Path, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    batch = write_jsonl(tmp_path / "rows.jsonl", rows)
    capsys.readouterr()
    assert cli_main(["batch", str(batch), "--db", db_url, "--create", "--script", str(script), "--json"]) == 0
    return list(json.loads(capsys.readouterr().out)["task_ids"])


def test_sqlite_worker_runs_the_queue_in_process(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path / "script.json")
    ids = _batch(sqlite_url, 5, tmp_path, script, capsys)
    code = cli_main(
        ["worker", "--db", sqlite_url, "--script", str(script), "--once", "--concurrency", "2", "--json"]
    )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert summary["finished"] == {"awaiting_feedback": 5}
    statuses = sync_rows(sqlite_url, "select status, attempt_count from tasks")
    assert sorted(statuses) == [("awaiting_feedback", 1)] * len(ids)
    assert_event_sequences_contiguous(sqlite_url)


@pytest.mark.slow
def test_three_workers_over_60_tasks_run_each_once(
    pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    processes: list[ZygoteProcess],
) -> None:
    script = write_script(tmp_path / "script.json", agent_delay=0.2)
    ids = _batch(pg_url, TASKS, tmp_path, script, capsys)
    for n in range(WORKERS):
        processes.append(
            worker_process(pg_url, script, "--once", "--concurrency", "4", "--name", f"w{n}", "--json")
        )
    for p in processes:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()
    rows = sync_rows(pg_url, "select id, status, attempt_count from tasks")
    assert len(rows) == TASKS and {r[0] for r in rows} == set(ids)
    assert {(r[1], r[2]) for r in rows} == {("awaiting_feedback", 1)}  # right status, run once
    # one attempt and one main run per task: nobody ran a task twice
    assert sync_rows(pg_url, "select count(*), count(distinct task_id) from attempts") == [(TASKS, TASKS)]
    runs = sync_rows(pg_url, "select count(*), count(distinct task_id) from runs where kind = 'agent'")
    assert runs == [(TASKS, TASKS)]
    assert_event_sequences_contiguous(pg_url)
    # procrastinate kept no job behind (successful jobs are deleted)
    assert sync_rows(pg_url, "select count(*) from procrastinate_jobs where status <> 'succeeded'") == [(0,)]


@pytest.mark.slow
def test_a_worker_killed_mid_task_loses_nothing(
    pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    processes: list[ZygoteProcess],
) -> None:
    turn = {"delay_s": 2.0}
    script = tmp_path / "script.json"
    search = {"name": "search_corpus", "arguments": {"query": "tides"}}
    conversations = [
        {
            "model": "agent",
            "turns": [{"tool_calls": [search], **turn}, {"content": "Tides: the Moon.", **turn}],
        },
        {"model": "validator", "turns": [{"content": VERDICT_CITING_E1}]},
    ]
    script.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    fast = ("--heartbeat", "0.5", "--stalled-after", "3", "--poll", "0.5")
    workers = [worker_process(pg_url, script, *fast, "--name", f"w{n}") for n in range(2)]
    processes.extend(workers)
    # both workers are up (registered with procrastinate) before there is any work
    _wait_for(
        pg_url, "select count(*) from procrastinate_workers", lambda rows: rows[0][0] >= 2, proc=workers[0]
    )
    (task_id,) = _batch(pg_url, 1, tmp_path, script, capsys)
    # whichever worker took the job is the victim, killed while its agent waits on the model
    rows = _wait_for(
        pg_url,
        f"select t.runner, (select count(*) from events e where e.task_id = t.id "
        f"and e.kind = 'llm_request_snapshotted') from tasks t where t.id = '{task_id}'",
        lambda rows: rows[0][0] is not None and rows[0][1] >= 1,
        proc=workers[0],
    )
    pid = int(str(rows[0][0]).rpartition(":")[2])
    victim = next(p for p in workers if p.pid == pid)
    survivor = next(p for p in workers if p.pid != pid)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=60)
    rows = _wait_for(
        pg_url,
        f"select status from tasks where id = '{task_id}'",
        lambda rows: rows[0][0] in ("awaiting_feedback", "needs_review", "failed"),
        proc=survivor,
    )
    assert rows == [("awaiting_feedback",)]
    survivor.send_signal(signal.SIGTERM)
    _, err = survivor.communicate(timeout=120)
    assert survivor.returncode == 0, err.decode()
    assert "1 resumed from a dead worker" in err.decode()
    assert "of a stalled worker is retried" in err.decode()  # procrastinate's stalled-job retry
    attempts = sync_rows(
        pg_url, f"select index, state from attempts where task_id = '{task_id}' order by index"
    )
    assert attempts == [(1, "interrupted"), (2, "finished")]
    # the killed attempt keeps the packet its events make (issue 32): the next attempt's validator
    # reads its evidence (the search's result, when the kill came after it) under the ids it keeps
    packets = sync_rows(
        pg_url, f"select index, packet from attempts where task_id = '{task_id}' order by index"
    )
    assert packets[0][1] is not None and packets[0][1]["attempt_index"] == 1, packets[0]
    assert sync_rows(pg_url, "select count(*) from runs where state = 'running'") == [(0,)]
    assert sync_rows(pg_url, "select count(*) from events where kind = 'run_interrupted'") == [(1,)]
    assert sync_rows(pg_url, "select count(*) from tasks where status in ('running', 'validating')") == [(0,)]
    assert_event_sequences_contiguous(pg_url)


def _wait_for(
    pg_url: str,
    sql: str,
    predicate: Callable[[list[tuple[Any, ...]]], bool],
    *,
    proc: ZygoteProcess,
    within_s: float = 300,
) -> list[tuple[Any, ...]]:
    """Poll the database until ``predicate(rows)``: bounded (five minutes), waiting on ``proc``
    between polls, and failing at once if that process dies."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            rows = sync_rows(pg_url, sql)
        except ProgrammingError:  # the workers have not created the tables yet
            rows = []
        if rows and predicate(rows):
            return rows
        assert time.monotonic() < deadline, f"timed out waiting: {rows}"
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.1)
        if proc.returncode is not None:
            raise AssertionError(f"worker exited early: {proc.stderr.read().decode() if proc.stderr else ''}")


@pytest.mark.slow
def test_abandon_aborts_the_workers_job(
    pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    processes: list[ZygoteProcess],
) -> None:
    import asyncio

    from core.config import load_settings
    from core.domain import FeedbackAction
    from core.tasks.review import ReviewService
    from core.tasks.service import TaskService
    from core.workspace import Workspace

    script = write_script(tmp_path / "script.json", agent_delay=3000)  # only an abort ends this run
    (task_id,) = _batch(pg_url, 1, tmp_path, script, capsys)
    worker = worker_process(
        pg_url, script, "--poll", "0.5", "--heartbeat", "0.5", EVIDENCE_DESK_LLM_TIMEOUT_S="3600"
    )
    processes.append(worker)
    _wait_for(  # the worker has started the attempt (its agent now waits on the model)
        pg_url,
        f"select t.status, (select count(*) from attempts a where a.task_id = t.id) from tasks t "
        f"where t.id = '{task_id}'",
        lambda rows: rows[0] == ("running", 1),
        proc=worker,
    )

    async def abandon() -> None:
        ws = await Workspace.open(load_settings(db_url=pg_url, script=str(script)))
        try:
            task = await ws.store.get_task(task_id)
            await ReviewService(TaskService(ws)).feedback(
                task_id, FeedbackAction.ABANDON, expected_version=task.version
            )
        finally:
            await ws.close()

    asyncio.run(abandon())
    rows = _wait_for(
        pg_url,
        f"select status from procrastinate_jobs where lock = '{task_id}'",
        lambda rows: rows[0][0] in ("aborted", "failed", "succeeded"),
        proc=worker,
    )
    assert rows == [("aborted",)]  # the running job was cancelled, not waited out
    assert sync_rows(pg_url, "select status from tasks") == [("abandoned",)]
    assert sync_rows(pg_url, "select state from attempts") == [("cancelled",)]
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err.decode()
    assert_event_sequences_contiguous(pg_url)
