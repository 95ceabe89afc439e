"""Files travel with the job: a team template or a checklist given on the command line is stored as
content in the workspace when the work is queued, and read from there by whichever worker runs it.

The file is deleted after queuing in every test: the worker's machine does not have it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from core.config import load_settings
from core.domain.carried import parse_carried
from core.store.schedules import FiringStatus, ScheduleRepository
from core.tasks.service import TaskService
from core.workers.schedules import add_schedule, fire
from core.workspace import Workspace
from tests.team.conftest import VERDICT_OK, sync_rows, worker_process, write_jsonl
from tests.team.old_rows import schedule_with_a_lost_checklist
from tests.zygote import ZygoteProcess

TEAM = {"mode": "parallel", "nodes": [{"id": "tides", "role": "Researcher", "task": "Research the tides"}]}
CHECKLIST = "# HEARTBEAT.md\n- Re-run last night's failed export and report its bundle id.\n"


def _team_script(path: Path) -> Path:
    conversations = [
        {"model": "agent", "match": "source of truth", "turns": [{"content": "Synthesis: tides are daily."}]},
        {"model": "agent", "turns": [{"content": "Node finding: two tides a day."}]},
        {"model": "validator", "turns": [{"content": VERDICT_OK}]},
    ]
    path.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    return path


def _team_file(tmp_path: Path) -> Path:
    team = tmp_path / "queuing-machine" / "tides-team.json"
    team.parent.mkdir()
    team.write_text(json.dumps(TEAM), encoding="utf-8")
    return team


@pytest.fixture
async def ws(db_url: str, tmp_path: Path) -> AsyncIterator[Workspace]:
    workspace = await Workspace.open(
        load_settings(db_url=db_url, script=str(_team_script(tmp_path / "s.json")))
    )
    yield workspace
    await workspace.close()


@pytest.mark.slow
def test_on_postgresql_a_worker_runs_queued_work_whose_files_are_not_on_its_machine(
    pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    processes: list[ZygoteProcess],
) -> None:
    """A real worker process: the batch's team template, deleted after queuing, runs from the
    stored content; a schedule an older version added (its checklist only a path, absent here)
    fails its firing job with the reason stored and counted, where it used to count nothing."""
    older = tmp_path / "older"
    older.mkdir()
    schedule_id, _ = asyncio.run(schedule_with_a_lost_checklist(pg_url, older))
    script = _team_script(tmp_path / "script.json")
    team = _team_file(tmp_path)
    rows = write_jsonl(tmp_path / "rows.jsonl", 2, prefix="Tides")
    capsys.readouterr()
    assert (
        cli_main(["batch", str(rows), "--team", str(team), "--json", "--db", pg_url, "--script", str(script)])
        == 0
    )
    ids = json.loads(capsys.readouterr().out)["task_ids"]
    team.unlink()  # absent on the worker's machine
    worker = worker_process(
        pg_url, script, "--poll", "0.5", "--heartbeat", "0.5", EVIDENCE_DESK_COHERENCE_MIN_CITATIONS="0"
    )
    processes.append(worker)
    firing = f"select last_status, last_reason from schedules where id = '{schedule_id}'"
    batch = "select id, status, team_spec from tasks where batch_id is not null order by id"
    deadline = time.monotonic() + 300
    # until the firing failed (the periodic tick defers it within 5 s) and both rows rest
    while sync_rows(pg_url, firing)[0][0] != "failed" or {r[1] for r in sync_rows(pg_url, batch)} & {
        "open",
        "running",
        "validating",
    }:
        assert time.monotonic() < deadline, "not done within five minutes"
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(timeout=0.2)
        assert worker.returncode is None, worker.stderr.read().decode() if worker.stderr else ""
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err.decode()
    done = sync_rows(pg_url, batch)
    assert sorted(r[0] for r in done) == sorted(ids)
    assert {r[1] for r in done} == {"awaiting_feedback"}, err.decode()
    assert all(parse_carried(r[2]) is not None for r in done)  # a stored reference, not a path
    nodes = sync_rows(pg_url, "select task_id, label from sessions where kind = 'node' order by task_id")
    assert nodes == [(i, "tides") for i in sorted(ids)]  # the team ran, from the stored template
    assert "HEARTBEAT.md" in sync_rows(pg_url, firing)[0][1]
    lines = err.decode().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("worker stopped"))
    assert "2 task(s) run (2 awaiting_feedback)" in lines[start]
    assert "1 heartbeat firing(s), 1 failed" in lines[start], err.decode()
    assert lines[start + 1].split()[:3] == [schedule_id[:12], "firing", "failed:"]


async def test_a_task_carries_its_team_template_into_the_workspace(ws: Workspace, tmp_path: Path) -> None:
    team = _team_file(tmp_path)
    task = await TaskService(ws).create("How do tides work?", team=str(team))
    team.unlink()
    carried = parse_carried(task.team_spec or "")
    assert carried is not None and carried.name == "tides-team.json"
    assert str(tmp_path) not in (task.team_spec or "")  # the queuing machine's directories stay there
    assert await ws.store.read_content(carried.sha256) == json.dumps(TEAM)
    final = await TaskService(ws).run(task.id)
    assert final.status.value != "failed"
    runs = await ws.store.list_runs(task_id=task.id)
    assert "node" in {r.kind for r in runs}


async def test_an_older_row_holding_a_path_still_runs_from_the_disk(ws: Workspace, tmp_path: Path) -> None:
    team = _team_file(tmp_path)
    task = await ws.store.create_task(
        "How do tides work?", team_spec=str(team)
    )  # as an older version wrote it
    final = await TaskService(ws).run(task.id)
    assert final.status.value != "failed"
    assert "node" in {r.kind for r in await ws.store.list_runs(task_id=task.id)}


async def test_a_schedules_checklist_is_stored_and_later_firings_read_it_from_the_workspace(
    ws: Workspace, tmp_path: Path
) -> None:
    checklist = tmp_path / "HEARTBEAT.md"
    checklist.write_text(CHECKLIST, encoding="utf-8")
    schedule = await add_schedule(ws, "Work through HEARTBEAT.md", interval_s=1800, checklist=checklist)
    checklist.unlink()
    assert parse_carried(schedule.checklist or "") is not None
    await fire(ws, schedule.id)  # the schedule's first task, made when it was added
    second = await fire(ws, schedule.id)  # the series' next task: the checklist is read again
    assert second.status is FiringStatus.RAN, second
    moved = await ScheduleRepository(ws.store).get(schedule.id)
    new = await ws.store.get_task(moved.task_id)
    assert new.id != schedule.task_id and "Re-run last night's failed export" in new.text
    assert "The checklist (HEARTBEAT.md)" in new.text


@pytest.mark.parametrize("what", ["run", "batch", "schedule"])
def test_a_missing_or_unreadable_file_is_refused_when_queuing(
    what: str, sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _team_script(tmp_path / "s.json")
    base = ["--db", sqlite_url, "--create", "--script", str(script)]
    rows = write_jsonl(tmp_path / "rows.jsonl", 2)
    bad_utf8 = tmp_path / "latin1.json"
    bad_utf8.write_bytes(b'{"mode": "parallel", "nodes": [{"id": "caf\xe9"}]}')
    for bad, problem in ((tmp_path / "absent.json", "absent.json"), (bad_utf8, "not UTF-8")):
        argv = {
            "run": ["run", "Question?", "--team", str(bad)],
            "batch": ["batch", str(rows), "--team", str(bad)],
            "schedule": ["schedule", "add", "Work through it", "--every", "60", "--checklist", str(bad)],
        }[what]
        capsys.readouterr()
        assert cli_main([*argv, *base]) == 4
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and problem in err, err
    # nothing queued (``batch`` refuses before it even opens the workspace)
    db = tmp_path / "workspace.sqlite3"
    assert not db.exists() or sync_rows(sqlite_url, "select count(*) from tasks") == [(0,)]
