"""Issue 30, point 12: ``list`` names outcomes in the words the README promises (never the stored
``force_accepted``) under a header row; ``--json`` keeps the stored values."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from core.config import load_settings
from core.domain import TaskStatus
from core.domain.status import ValidationOutcome
from core.tasks.service import TaskService
from core.workspace import Workspace


@pytest.fixture(autouse=True)
def _no_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("EVIDENCE_DESK_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(tmp_path / "absent" / "config.toml"))


async def _workspace_with_outcomes(db: Path, script: Path) -> None:
    script.write_text(
        json.dumps({"conversations": [{"model": "agent", "turns": [{"content": "x"}]}]}), encoding="utf-8"
    )
    ws = await Workspace.open(load_settings(db_url=f"sqlite+aiosqlite:///{db}", script=script))
    try:
        service = TaskService(ws)
        forced = await service.create("a rejected answer", title="Forced through")
        await ws.store.update_task(
            forced.id,
            status=TaskStatus.NEEDS_REVIEW,
            validation_outcome=ValidationOutcome.FORCE_ACCEPTED,
            latest_validation_status="rejected",
        )
        endorsed = await service.create("a good answer", title="Endorsed")
        await ws.store.update_task(
            endorsed.id, status=TaskStatus.AWAITING_FEEDBACK, validation_outcome=ValidationOutcome.ACCEPTED
        )
        await service.create("not run yet", title="Waiting")
    finally:
        await ws.close()


def test_list_prints_a_header_and_honest_outcome_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    db = tmp_path / "ws.sqlite3"
    asyncio.run(_workspace_with_outcomes(db, tmp_path / "script.json"))
    assert cli_main(["list", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["ID", "STATUS", "OUTCOME"] and lines[0].rstrip().endswith("TITLE")
    rows = {line.rsplit(" ", 1)[-1]: line for line in lines[1:]}
    assert "not endorsed: rejected" in rows["through"]
    assert "accepted by validator" in rows["Endorsed"]
    assert "no outcome yet" in rows["Waiting"]
    assert "force_accepted" not in "\n".join(lines)

    assert cli_main(["list", "--db", str(db), "--json"]) == 0
    stored = {t["title"]: t["validation_outcome"] for t in json.loads(capsys.readouterr().out)}
    assert stored["Forced through"] == "force_accepted"  # the JSON is unchanged: stored values
