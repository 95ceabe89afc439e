"""Schedules as tests need them: a heartbeat script, a checklist file, and a schedule row as an
older version wrote it (its checklist a path, absent on the machine that fires it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from core.config import load_settings
from core.store.schedules import FiringStatus
from core.workers.schedules import Firing, add_schedule, fire
from core.workspace import Workspace
from tests.team.conftest import VERDICT_OK

CHECKLIST = "# HEARTBEAT.md\n- Re-run last night's failed export and report its bundle id.\n"


def heartbeat_script(path: Path, *, agent: list[dict[str, object]] | None = None) -> Path:
    conversations = [
        {"model": "agent", "turns": agent or [{"content": "HEARTBEAT_OK"}]},
        {"model": "validator", "turns": [{"content": VERDICT_OK}]},
    ]
    path.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    return path


def write_checklist(tmp_path: Path) -> Path:
    path = tmp_path / "HEARTBEAT.md"
    path.write_text(CHECKLIST, encoding="utf-8")
    return path


async def schedule_with_a_lost_checklist(
    db_url: str, tmp_path: Path, *, fire_it: bool = False
) -> tuple[str, Firing | None]:
    """A schedule added by an older version, which kept only its checklist's path, and that path is
    not on this machine; its first firing ran, so the next one must read the checklist."""
    from sqlalchemy import update

    from core.store.models import ScheduleRow

    workspace = await Workspace.open(
        load_settings(db_url=db_url, script=str(heartbeat_script(tmp_path / "s.json")))
    )
    try:
        schedule = await add_schedule(
            workspace, "Work through HEARTBEAT.md", interval_s=3600, checklist=write_checklist(tmp_path)
        )
        first = await fire(workspace, schedule.id)
        assert first.status is FiringStatus.RAN, first
        async with workspace.store._write() as s:
            await s.execute(
                update(ScheduleRow)
                .where(ScheduleRow.id == schedule.id)
                .values(
                    checklist=str(tmp_path / "gone" / "HEARTBEAT.md"),
                    next_run_at=datetime.now(UTC) - timedelta(seconds=1),
                )
            )
        return schedule.id, (await fire(workspace, schedule.id) if fire_it else None)
    finally:
        await workspace.close()
