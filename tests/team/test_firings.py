"""A schedule's firings: each failed firing stores its reason, ``schedule list`` shows how the last
one ended, the worker counts firings and failures, the next firing keeps to the schedule's own
grid, and a schedule's task always runs with its schedule's validation settings."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from core.config import load_settings
from core.domain.cadence import next_due
from core.store.schedules import FiringStatus, ScheduleRepository
from core.workers.schedules import add_schedule, fire
from core.workspace import Workspace
from tests.team.conftest import sync_rows
from tests.team.old_rows import heartbeat_script, schedule_with_a_lost_checklist, write_checklist

T0 = datetime(2026, 11, 26, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
async def ws(sqlite_url: str, tmp_path: Path) -> AsyncIterator[Workspace]:
    workspace = await Workspace.open(
        load_settings(db_url=sqlite_url, script=str(heartbeat_script(tmp_path / "s.json")))
    )
    yield workspace
    await workspace.close()


# ---------------------------------------------------------------------- next due time, no drift
def test_every_15_s_is_counted_from_the_due_time_not_from_the_firing() -> None:
    # a tick every 5 s claims a firing due at T0 up to 5 s late; the next stays on T0's grid
    assert next_due(None, 15, T0, T0 + timedelta(seconds=4)) == T0 + timedelta(seconds=15)
    assert next_due(None, 15, T0, T0) == T0 + timedelta(seconds=15)
    # missed firings (no worker ran) are skipped to the grid's next point, not fired one by one
    assert next_due(None, 15, T0, T0 + timedelta(seconds=100)) == T0 + timedelta(seconds=105)
    assert next_due(None, 15, T0, T0 + timedelta(seconds=15)) == T0 + timedelta(seconds=30)
    # cron: the next match after the due time (and after now)
    assert next_due("*/15 * * * *", None, T0, T0 + timedelta(seconds=40)) == T0 + timedelta(minutes=15)


async def test_a_firing_moves_the_schedule_on_by_its_interval_from_its_due_time(
    ws: Workspace, tmp_path: Path
) -> None:
    repo = ScheduleRepository(ws.store)
    schedule = await add_schedule(
        ws, "Work through HEARTBEAT.md", interval_s=15, checklist=write_checklist(tmp_path)
    )
    due = schedule.next_run_at
    firing = await fire(ws, schedule.id, now=due + timedelta(seconds=4.5))  # the tick came 4.5 s late
    assert firing.status is FiringStatus.RAN
    assert (await repo.get(schedule.id)).next_run_at == due + timedelta(seconds=15)  # not due + 19.5 s


# ---------------------------------------------------------------------- failed firings
def test_a_failed_firing_stores_its_reason_and_schedule_list_shows_it(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule_id, firing = asyncio.run(schedule_with_a_lost_checklist(sqlite_url, tmp_path, fire_it=True))
    assert firing is not None and firing.status is FiringStatus.FAILED
    status, reason = sync_rows(
        sqlite_url, f"select last_status, last_reason from schedules where id = '{schedule_id}'"
    )[0]
    assert status == "failed" and reason == firing.reason
    assert "HEARTBEAT.md" in reason and "older version" in reason  # what and why a path was read at all
    base = ["--db", sqlite_url, "--script", str(tmp_path / "s.json")]
    capsys.readouterr()
    assert cli_main(["schedule", "list", *base]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(schedule_id[:12]) and "last failed: cannot read heartbeat checklist" in line
    assert cli_main(["schedule", "list", "--json", *base]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["last_status"] == "failed" and listed["last_reason"] == reason


async def test_a_firing_whose_task_ends_failed_is_a_failed_firing_with_the_tasks_reason(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = heartbeat_script(tmp_path / "s.json", agent=[{"error": "bad_request"}])
    monkeypatch.setenv("EVIDENCE_DESK_LLM_NUM_RETRIES", "0")
    workspace = await Workspace.open(load_settings(db_url=sqlite_url, script=str(script)))
    try:
        schedule = await add_schedule(workspace, "Work through HEARTBEAT.md", interval_s=3600)
        firing = await fire(workspace, schedule.id)
        assert firing.status is FiringStatus.FAILED, firing
        assert firing.reason is not None and f"task {schedule.task_id[:8]} failed:" in firing.reason
        assert "llm_error" in firing.reason
    finally:
        await workspace.close()


def test_the_worker_summary_counts_firings_and_failures(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule_id, _ = asyncio.run(schedule_with_a_lost_checklist(sqlite_url, tmp_path))
    base = ["--db", sqlite_url, "--script", str(tmp_path / "s.json")]
    capsys.readouterr()
    assert cli_main(["worker", "--once", "--json", *base]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["firings"], summary["failed_firings"]) == (1, 1)
    (failure,) = summary["failures"]
    assert failure["task_id"] == schedule_id and failure["outcome"] == "firing failed"
    assert "HEARTBEAT.md" in failure["reason"]
    # the terminal form: the counts on the summary line, then the failure with its reason
    asyncio.run(_reset_due(sqlite_url, schedule_id))
    assert cli_main(["worker", "--once", *base]) == 0
    err = capsys.readouterr().err.splitlines()
    start = next(i for i, line in enumerate(err) if line.startswith("worker stopped"))
    assert "1 heartbeat firing(s), 1 failed" in err[start]
    assert err[start + 1].split()[:3] == [schedule_id[:12], "firing", "failed:"]


async def _reset_due(db_url: str, schedule_id: str) -> None:
    from sqlalchemy import update

    from core.store import Store
    from core.store.models import ScheduleRow

    store = await Store.open(db_url)
    try:
        async with store._write() as s:
            await s.execute(
                update(ScheduleRow)
                .where(ScheduleRow.id == schedule_id)
                .values(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
            )
    finally:
        await store.close()


# ---------------------------------------------------------------------- own validation settings
def _dead_runner() -> str:
    """A runner id on this host whose process has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{socket.gethostname()}:{child.pid}"


def test_a_schedules_task_resumed_by_a_worker_keeps_the_schedules_validation_settings(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A firing's runner died mid-run; the worker that resumes the task runs it as a heartbeat
    (verify_heartbeat off: not validated), never as a plain task (the settings' validate-always)."""
    script = heartbeat_script(tmp_path / "s.json")
    base = ["--db", sqlite_url, "--create", "--script", str(script)]
    assert cli_main(["schedule", "add", "Work through it", "--every", "3600", "--json", *base]) == 0
    added = json.loads(capsys.readouterr().out)
    runner = _dead_runner()
    _execute(  # the task as a firing whose process died mid-run left it
        sqlite_url,
        f"update tasks set status = 'running', runner = '{runner}' where id = '{added['task_id']}'",
    )
    assert cli_main(["worker", "--once", "--json", *base]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["resumed"] == 1, summary
    status, validated = sync_rows(
        sqlite_url,
        "select t.status, count(v.id) from tasks t left join validations v on v.task_id = t.id "
        f"where t.id = '{added['task_id']}' group by t.status",
    )[0]
    assert (status, validated) == ("needs_review", 0)  # a heartbeat's unvalidated answer, for review


def _execute(db_url: str, sql: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    engine = create_engine(make_url(db_url).set(drivername="sqlite"))
    try:
        with engine.begin() as conn:
            conn.execute(text(sql))
    finally:
        engine.dispose()
