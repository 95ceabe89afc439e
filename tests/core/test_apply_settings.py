"""Settings applied to an open workspace reach the next call of every service; the database cannot
change under it (issue 30, item 3: Save applies without a restart)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.config import load_settings
from core.errors import ConfigurationError
from core.tasks.review import ReviewService
from core.tasks.service import TaskService
from core.workspace import Workspace


def _script(path: Path, answer: str) -> Path:
    turns = {"agent": [{"content": answer}], "validator": [{"content": "not json"}] * 4}
    path.write_text(
        json.dumps({"conversations": [{"model": m, "turns": t} for m, t in turns.items()]}), encoding="utf-8"
    )
    return path


async def test_applied_settings_reach_the_next_run_without_reopening(tmp_path: Path, sqlite_url: str) -> None:
    first = _script(tmp_path / "first.json", "first answer")
    ws = await Workspace.open(load_settings(db_url=sqlite_url, script=str(first)))
    try:
        service = TaskService(ws)
        review = ReviewService(service)
        task = await service.run((await service.create("What is it?")).id)
        assert (await ws.store.list_attempts(task.id))[-1].final_output == "first answer"
        old_gateway = ws.gateway

        second = _script(tmp_path / "second.json", "second answer")
        ws.apply_settings(load_settings(db_url=sqlite_url, script=str(second), reviewer="dana"))
        assert service.settings.script == second and review.settings.reviewer == "dana"
        assert ws.gateway is not old_gateway  # rebuilt from the new settings on its next use
        task = await service.run((await service.create("What is it now?")).id)
        assert (await ws.store.list_attempts(task.id))[-1].final_output == "second answer"

        with pytest.raises(ConfigurationError, match="cannot change while it is open"):
            ws.apply_settings(load_settings(db_url=f"sqlite+aiosqlite:///{tmp_path}/other.sqlite3"))
        broken = tmp_path / "broken.json"
        broken.write_text("{", encoding="utf-8")
        with pytest.raises(ConfigurationError):
            ws.apply_settings(load_settings(db_url=sqlite_url, script=str(broken)))
        assert ws.settings.script == second  # a refused settings object changes nothing
    finally:
        await ws.close()
