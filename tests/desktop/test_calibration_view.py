"""The Calibration window over a seeded workspace: exact matrix, kappa, tables, trend."""

from __future__ import annotations

import qasync
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from core.calibration import calibrate
from core.domain.status import TaskStatus
from core.workspace import Workspace
from desktop.ops import CoreOps
from desktop.views.insight.calibration import CalibrationView
from tests.desktop.conftest import run


async def seed(ws: Workspace, status: str, action: str, category: str = "none") -> None:
    store = ws.store
    task = await store.create_task(f"{status} then {action}")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    await store.add_validation(
        task_id=task.id,
        attempt_id=attempt.id,
        attempt_index=1,
        result={"status": status, "score": 0.5, "category": category},
        raw_response="{}",
        prompt=None,
        debug={"validator_model": "scripted/judge", "warnings": []},
    )
    await store.add_feedback(
        task_id=task.id,
        attempt_id=attempt.id,
        action=action,
        prompt=None,
        note=None,
        reviewer="ana",
        from_status=TaskStatus.AWAITING_FEEDBACK,
        to_status=TaskStatus.CLOSED,
    )


def test_calibration_view_shows_the_seeded_figures(
    qtbot: QtBot, qloop: qasync.QEventLoop, workspace: Workspace
) -> None:
    # 2 agree yes, 1 agrees no, 1 disagrees: p_o = 3/4, p_e = (3*2 + 1*2)/16 = 1/2, kappa = 1/2
    for status, action, category in (
        ("accepted", "satisfied", "none"),
        ("accepted", "satisfied", "none"),
        ("accepted", "revise", "incomplete"),
        ("rejected", "abandon", "goal_missed"),
    ):
        run(qloop, seed(workspace, status, action, category))
    ops = CoreOps()
    view = CalibrationView(ops, lambda f: calibrate(workspace.store, f))
    qtbot.addWidget(view)
    loaded: list[bool] = []
    view.sig_loaded.connect(lambda: loaded.append(True))
    view.refresh()
    run(qloop, ops.wait_idle())
    assert loaded == [True]
    assert view.calibration is not None and view.calibration.kappa == 0.5
    assert "4 decided attempts · Cohen's kappa 0.50 · agreement 0.75" in view.summary.text()
    m = view.matrix
    assert m.headerData(0, Qt.Orientation.Vertical) == "accepted"
    assert [m.data(m.index(0, c)) for c in range(4)] == ["2", "1", "0", "0"]
    assert [m.data(m.index(1, c)) for c in range(4)] == ["0", "0", "1", "0"]
    hottest = m.data(m.index(0, 0), Qt.ItemDataRole.BackgroundRole).color()
    coldest = m.data(m.index(1, 0), Qt.ItemDataRole.BackgroundRole).color()
    assert hottest.red() < coldest.red()  # the heatmap shades the larger count darker
    assert view.sparkline.values == [0.75]

    view.category_combo.setCurrentIndex(view.category_combo.findData("goal_missed"))
    view.refresh()
    run(qloop, ops.wait_idle())
    assert view.calibration.n == 1 and view.calibration.matrix["rejected"]["abandoned"] == 1
