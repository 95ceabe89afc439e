"""Scheduled heartbeat tasks (seed 004): each firing an attempt; a lazy HEARTBEAT_OK is caught."""

from __future__ import annotations

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
from core.domain import TaskStatus
from core.store.schedules import ScheduleRepository
from core.workers.schedules import add_schedule, fire
from core.workspace import Workspace
from tests.team.conftest import sync_rows, worker_process
from tests.zygote import ZygoteProcess

CHECKLIST = """# HEARTBEAT.md
- Check the inbox folder for new flagged answers and summarise each one.
- Re-run last night's failed export and report its bundle id.
"""

GOAL_MISSED = json.dumps(
    {
        "goal_achievement": "the checklist asks for two pieces of work; none was done",
        "completeness": "nothing reported",
        "rule_compliance": "no rules",
        "status": "rejected",
        "score": 0.1,
        "issues": ["answered HEARTBEAT_OK without doing the checklist"],
        "recommended_revision_prompt": "Do the checklist items and report what you found.",
        "category": "goal_missed",
        "citations": [],
    }
)


def _script(path: Path) -> Path:
    lazy = {"content": "HEARTBEAT_OK"}
    conversations = [
        {"model": "agent", "turns": [lazy, lazy, lazy, lazy]},
        {"model": "validator", "turns": [{"content": GOAL_MISSED}]},
    ]
    path.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    return path


@pytest.fixture
async def ws(db_url: str, tmp_path: Path) -> AsyncIterator[Workspace]:
    workspace = await Workspace.open(load_settings(db_url=db_url, script=str(_script(tmp_path / "s.json"))))
    yield workspace
    await workspace.close()


@pytest.fixture
def checklist(tmp_path: Path) -> Path:
    path = tmp_path / "HEARTBEAT.md"
    path.write_text(CHECKLIST, encoding="utf-8")
    return path


async def test_lazy_heartbeat_ok_is_goal_missed_and_retried_with_verify_heartbeat(
    ws: Workspace, checklist: Path
) -> None:
    schedule = await add_schedule(
        ws, "Work through HEARTBEAT.md", interval_s=1800, checklist=checklist, verify_heartbeat=True
    )
    verdict = (await fire(ws, schedule.id)).verdict
    task = await ws.store.get_task(schedule.task_id)
    attempts = await ws.store.list_attempts(task.id)
    # validated although "HEARTBEAT_OK" holds no trigger keyword; rejected, retried, rejected again
    assert [a.validation_status for a in attempts] == ["rejected", "rejected"]
    assert [a.trigger for a in attempts] == ["initial", "validator_revision"]
    assert task.latest_category == "goal_missed"
    assert verdict == "rejected: goal_missed"
    assert (await ScheduleRepository(ws.store).get(schedule.id)).last_verdict == verdict
    assert "Re-run last night's failed export" in attempts[0].prompt  # the checklist was in the firing


async def test_without_verify_heartbeat_a_heartbeat_answer_is_not_validated(
    ws: Workspace, checklist: Path
) -> None:
    schedule = await add_schedule(ws, "Work through HEARTBEAT.md", cron="*/30 * * * *", checklist=checklist)
    first = (await fire(ws, schedule.id)).verdict
    task = await ws.store.get_task(schedule.task_id)
    attempts = await ws.store.list_attempts(task.id)
    # a skipped validation confirms nothing: the answer waits for an analyst, unvalidated
    assert first == "needs_review (not validated)"
    assert task.status is TaskStatus.NEEDS_REVIEW
    assert [a.validation_status for a in attempts] == [None]
    runs = await ws.store.list_runs(task_id=task.id)
    assert len(runs) == 1 and {r.session_id for r in runs} == {task.main_session_id}


async def test_a_firing_never_reruns_a_task_waiting_for_review(ws: Workspace, checklist: Path) -> None:
    """Seed 002: the next firing is a new task of the series; the waiting answer is left alone."""
    schedule = await add_schedule(ws, "Work through HEARTBEAT.md", cron="*/30 * * * *", checklist=checklist)
    await fire(ws, schedule.id)
    waiting = await ws.store.get_task(schedule.task_id)
    second = (await fire(ws, schedule.id)).verdict
    assert second == f"needs_review (not validated) (new task; {waiting.id[:8]} needs_review)"
    moved = await ScheduleRepository(ws.store).get(schedule.id)
    assert moved.task_id != waiting.id
    assert await ws.store.get_task(waiting.id) == waiting  # not a write: same version, same answer
    new = await ws.store.get_task(moved.task_id)
    assert new.title == waiting.title and new.attempt_count == 1
    assert "Work through HEARTBEAT.md" in new.text and "Re-run last night's failed export" in new.text


async def test_a_firing_is_claimed_once(ws: Workspace, checklist: Path) -> None:
    repo = ScheduleRepository(ws.store)
    schedule = await add_schedule(ws, "Work through HEARTBEAT.md", interval_s=60, checklist=checklist)
    later = schedule.next_run_at.replace(year=schedule.next_run_at.year + 1)
    assert await repo.claim(schedule.id, schedule.next_run_at, later)
    assert not await repo.claim(schedule.id, schedule.next_run_at, later)  # a second desk or worker


def test_schedule_add_list_remove_on_the_command_line(
    sqlite_url: str, tmp_path: Path, checklist: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = str(_script(tmp_path / "s.json"))
    base = ["--db", sqlite_url, "--create", "--script", script]
    assert (
        cli_main(
            [
                "schedule",
                "add",
                "Work through HEARTBEAT.md",
                "--every",
                "900",
                "--checklist",
                str(checklist),
                "--json",
                *base,
            ]
        )
        == 0
    )
    added = json.loads(capsys.readouterr().out)
    assert cli_main(["schedule", "list", "--json", *base]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in listed] == [added["id"]] and listed[0]["next_run_at"]
    assert cli_main(["schedule", "add", "x", "--cron", "not a cron", *base]) == 4
    assert "not a cron expression" in capsys.readouterr().err
    assert (
        cli_main(["schedule", "remove", "fffffff", *base]) == 4
    )  # matches nothing: one line, nothing removed
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no schedule matches 'fffffff'" in err
    assert cli_main(["schedule", "remove", added["id"][:10], *base]) == 0
    capsys.readouterr()
    assert cli_main(["schedule", "list", "--json", *base]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.slow
def test_on_postgresql_a_workers_periodic_task_fires_due_schedules(
    pg_url: str,
    tmp_path: Path,
    checklist: Path,
    capsys: pytest.CaptureFixture[str],
    processes: list[ZygoteProcess],
) -> None:
    script = _script(tmp_path / "s.json")
    base = ["--db", pg_url, "--script", str(script)]
    assert (
        cli_main(
            [
                "schedule",
                "add",
                "Work through HEARTBEAT.md",
                "--every",
                "1",
                "--checklist",
                str(checklist),
                "--json",
                *base,
            ]
        )
        == 0
    )
    added = json.loads(capsys.readouterr().out)
    worker = worker_process(pg_url, script, "--poll", "0.5", "--heartbeat", "0.5")
    processes.append(worker)
    deadline = time.monotonic() + 300
    while not sync_rows(pg_url, "select last_verdict from schedules where last_verdict is not null"):
        assert time.monotonic() < deadline, "no firing within five minutes"
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(timeout=0.2)
        assert worker.returncode is None, worker.stderr.read().decode() if worker.stderr else ""
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err.decode()
    assert "heartbeat firing(s), 0 failed" in err.decode()  # the summary counts the firings
    attempts = sync_rows(pg_url, f"select count(*) from attempts where task_id = '{added['task_id']}'")
    assert attempts[0][0] >= 1  # the first firing ran the schedule's own task
    # Later firings (if any came before SIGTERM) started the series' next tasks: the schedule's only.
    others = sync_rows(pg_url, f"select task_metadata from tasks where id != '{added['task_id']}'")
    assert all(added["id"] in str(meta) for (meta,) in others)
