"""The Calibration window per validator version: a table grouped by version, a filter by it, and
citation precision per validator model and version from analysts' marks."""

from __future__ import annotations

import qasync
from pytestqt.qtbot import QtBot

from core.calibration import calibrate
from core.domain.status import TaskStatus
from core.tasks.citation_marks import mark_citation
from core.workspace import Workspace
from desktop.models.rows_model import RowsModel
from desktop.ops import CoreOps
from desktop.views.insight.calibration import CalibrationView
from tests.desktop.conftest import run


async def seed(ws: Workspace, version: str, action: str, marks: list[str]) -> None:
    store = ws.store
    task = await store.create_task(f"{version} then {action}")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    cited = [
        {"claim": f"c{i}", "evidence_id": f"E{i}", "quote": "q", "verdict": "supported"}
        for i in range(len(marks))
    ]
    await store.add_validation(
        task_id=task.id, attempt_id=attempt.id, attempt_index=1,
        result={"status": "accepted", "score": 0.9, "category": "none", "citations": cited},
        raw_response="{}", prompt=None,
        debug={"validator_model": "scripted/judge", "validator_version": version, "warnings": []},
    )  # fmt: skip
    await store.add_feedback(
        task_id=task.id, attempt_id=attempt.id, action=action, prompt=None, note=None, reviewer="ana",
        from_status=TaskStatus.AWAITING_FEEDBACK, to_status=TaskStatus.CLOSED,
    )  # fmt: skip
    await store.update_task(task.id, expected_version=task.version, status=TaskStatus.CLOSED)
    for place, mark in enumerate(marks):
        await mark_citation(store, task.id, place, mark, reviewer="ana")


def _rows(view: CalibrationView, model: RowsModel[list[str]]) -> list[list[str]]:
    return [list(r) for r in model.rows]


def test_versions_table_filter_and_citation_precision(
    qtbot: QtBot, qloop: qasync.QEventLoop, workspace: Workspace
) -> None:
    run(qloop, seed(workspace, "v1aaaa", "satisfied", ["right", "right", "wrong"]))
    run(qloop, seed(workspace, "v1aaaa", "abandon", ["right"]))
    run(qloop, seed(workspace, "v2bbbb", "satisfied", ["wrong", "wrong"]))
    ops = CoreOps()
    view = CalibrationView(ops, lambda f: calibrate(workspace.store, f))
    qtbot.addWidget(view)
    view.refresh()
    run(qloop, ops.wait_idle())
    assert _rows(view, view.by_version) == [["v1aaaa", "2", "0.50", "0.00"], ["v2bbbb", "1", "1.00", "–"]]
    citations = _rows(view, view.citations)
    assert [r[:4] for r in citations] == [
        ["scripted/judge", "v1aaaa", "3", "1"],
        ["scripted/judge", "v2bbbb", "0", "2"],
    ]
    assert citations[0][4].startswith("0.75 [") and citations[1][4].startswith("0.00 [0.00, ")

    view.version_edit.setText("v2")  # a prefix, as the CLI takes it
    view.refresh()
    run(qloop, ops.wait_idle())
    assert view.calibration is not None and view.calibration.filter.validator_version == "v2"
    assert [r[0] for r in _rows(view, view.by_version)] == ["v2bbbb"]
    assert [r[1] for r in _rows(view, view.citations)] == ["v2bbbb"]
