"""A team workspace survives its database: workers reconnect after ``pg_ctl restart`` and after an
outage, and never exit quietly.

These tests take the database away, so they run on a PostgreSQL cluster of their own (one per
module), never on the session's shared server. Each step waits on an event it can see: a line in
a worker's log ("database unreachable", "reconnected"), a row in the database, a process's exit.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from tests.pg import PgServer, PgUnavailable, ServerControl, start_server
from tests.team.conftest import (
    LogTail,
    assert_event_sequences_contiguous,
    sync_rows,
    worker_process,
    write_jsonl,
    write_script,
)
from tests.team.test_workers import _wait_for
from tests.zygote import ZygoteProcess

FAST = ("--heartbeat", "0.5", "--stalled-after", "3", "--poll", "0.5")
TASKS = 6


@pytest.fixture(scope="module")
def own_pg() -> Iterator[PgServer]:
    """A private cluster this module may restart and stop (an external server cannot be)."""
    try:
        with start_server() as server:
            if server.control is None:
                pytest.skip("EVIDENCE_DESK_TEST_PG_URL names a server these tests cannot restart")
            yield server
    except PgUnavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")


@pytest.fixture
def own_pg_url(own_pg: PgServer, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"r_{request.node.name}".lower().replace("[", "_").replace("]", "").replace("-", "_")[:60]
    url = own_pg.create_database(name)
    yield url
    own_pg.drop_database(name)


def _control(server: PgServer) -> ServerControl:
    assert server.control is not None
    return server.control


def _batch(
    db_url: str, rows: int, tmp_path: Path, script: Path, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    batch = write_jsonl(tmp_path / "rows.jsonl", rows)
    capsys.readouterr()
    assert cli_main(["batch", str(batch), "--db", db_url, "--script", str(script), "--json"]) == 0
    return list(json.loads(capsys.readouterr().out)["task_ids"])


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["restart", "outage"])
def test_workers_survive_the_database_going_away(
    fault: str,
    own_pg: PgServer,
    own_pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    processes: list[ZygoteProcess],
) -> None:
    """``restart``: ``pg_ctl restart -m fast`` under two busy workers. ``outage``: the server is
    stopped and only started again once both workers said it is unreachable (a third worker, told
    to give up after 0.5 s, exits non-zero meanwhile). Either way every task reaches its resting
    status exactly once, none stays running, and both workers are still alive to stop cleanly."""
    script = write_script(tmp_path / "script.json", agent_delay=1.0)
    ids = _batch(own_pg_url, TASKS, tmp_path, script, capsys)
    workers = [
        worker_process(own_pg_url, script, *FAST, "--concurrency", "2", "--name", f"w{n}") for n in range(2)
    ]
    processes.extend(workers)
    tails = [LogTail(p) for p in workers]
    quitter: LogTail | None = None
    if fault == "outage":
        processes.append(
            worker_process(own_pg_url, script, *FAST, "--give-up-after", "0.5", "--name", "quitter")
        )
        quitter = LogTail(processes[-1])
    # the fault strikes while tasks are running (their agents wait on the model)
    _wait_for(
        own_pg_url,
        "select count(*) from tasks where status = 'running'",
        lambda rows: rows[0][0] >= 2,
        proc=workers[0],
    )
    control = _control(own_pg)
    if fault == "restart":
        control.restart()
    else:
        control.stop()
        for tail in tails:
            tail.wait_for("database unreachable, retrying in")
        assert quitter is not None
        assert quitter.finish() != 0, quitter.text()  # gave up: a supervisor restarts it
        assert "gave up" in quitter.text()
        control.start()
        for tail in tails:
            tail.wait_for("reconnected")
    try:
        _wait_for(
            own_pg_url,
            "select count(*) from tasks where status = 'awaiting_feedback'",
            lambda rows: rows[0][0] == TASKS,
            proc=workers[0],
            within_s=60,
        )
    except AssertionError:
        jobs = sync_rows(own_pg_url, "select id, status, lock, attempts, worker_id from procrastinate_jobs")
        tasks = sync_rows(own_pg_url, "select id, status, runner, attempt_count from tasks")
        tasks += sync_rows(own_pg_url, "select job_id, type, at from procrastinate_events order by id")
        raise AssertionError(f"{jobs}\n{tasks}\n" + "\n---\n".join(t.text() for t in tails)) from None
    for p in workers:
        assert p.poll() is None  # still alive after the database came back
        p.send_signal(signal.SIGTERM)
    for tail in tails:
        assert tail.finish() == 0, tail.text()  # a requested stop, and only that, exits 0
        # one line per state change: each outage a worker noticed is announced once and closed once
        # (procrastinate's pool and listener may ride out a 0.3 s restart unnoticed)
        assert tail.count("database unreachable, retrying in") == tail.count("reconnected to the database")
    assert sync_rows(own_pg_url, "select count(*) from tasks where status in ('running', 'validating')") == [
        (0,)
    ]
    assert sync_rows(own_pg_url, "select count(*) from runs where state = 'running'") == [(0,)]
    # each task reached its resting status exactly once
    arrivals = sync_rows(
        own_pg_url,
        "select task_id, count(*) from events where kind = 'task_status_changed' "
        "and payload->>'to' = 'awaiting_feedback' group by task_id",
    )
    assert sorted(arrivals) == sorted((i, 1) for i in ids)
    assert_event_sequences_contiguous(own_pg_url)


async def test_the_watcher_listens_again_after_a_restart_and_says_so(
    own_pg: PgServer, own_pg_url: str
) -> None:
    """An open desk's watcher: offline then online announced once each, and a decision made after
    the restart reaches it as a notice (before the change it was never heard of again)."""
    from core.events import EventBus, TaskChanged, WorkspaceConnection
    from core.store import Store
    from core.store.watch import ChangeWatcher

    store = await Store.open(own_pg_url)
    other = await Store.open(own_pg_url)
    bus = EventBus()
    seen: list[object] = []
    back = asyncio.Event()
    heard: set[str] = set()
    arrived = asyncio.Event()

    def on_event(event: object) -> None:
        seen.append(event)
        if isinstance(event, WorkspaceConnection) and event.online:
            back.set()
        if isinstance(event, TaskChanged):
            heard.add(event.task_id)
            arrived.set()

    bus.subscribe(on_event)
    watcher = ChangeWatcher(store, bus, keepalive=0.5)
    try:
        await watcher.start()
        await asyncio.to_thread(_control(own_pg).restart)
        await asyncio.wait_for(back.wait(), timeout=60)
        assert [e.online for e in seen if isinstance(e, WorkspaceConnection)] == [False, True]
        task = await other.create_task("Decided after the restart?")  # another process's write
        async with asyncio.timeout(60):
            while task.id not in heard:
                arrived.clear()
                await arrived.wait()
    finally:
        await watcher.close()
        await other.close()
        await store.close()
