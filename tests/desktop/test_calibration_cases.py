"""Click-through from the Calibration window: a cell or a rate lists exactly its cases in the queue."""

from __future__ import annotations

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from core.domain.queue import QUEUE_GROUPS
from core.workspace import Workspace
from desktop.models.calibration_cells import CELL_ROLE
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import run, started, wait_signal
from tests.desktop.test_calibration_view import seed


def _listed(desk: MainWindow) -> set[str]:
    return {t for g in QUEUE_GROUPS for t in desk.model.group_task_ids(g.key)}


@pytest.mark.qt_log_ignore("^This plugin does not support raise\\(\\)$")  # offscreen: no window manager
def test_a_cell_click_filters_the_queue_to_its_cases(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        decided = [
            ("accepted", "satisfied"),
            ("accepted", "abandon"),  # false accept
            ("accepted", "revise"),  # false accept
            ("rejected", "satisfied"),  # false reject
            ("rejected", "abandon"),
        ]
        for status, action in decided:
            await seed(workspace, status, action)
        tasks = await workspace.store.list_tasks()
        by_title = {t.title: t.id for t in tasks}
        await started(desk)
        assert len(_listed(desk)) == 5

        view = desk.calibration.open()
        await wait_signal(view.sig_loaded)
        cells = view.cells_view
        index = next(
            cells.model().index(r, c)
            for r in range(2)
            for c in range(2)
            if cells.model().index(r, c).data(CELL_ROLE) == "false_accept"
        )
        assert index.data() == "2"
        refreshed = wait_signal(desk.model.sig_refreshed)
        QTest.mouseClick(cells.viewport(), Qt.MouseButton.LeftButton, pos=cells.visualRect(index).center())
        await refreshed
        assert _listed(desk) == {by_title["accepted then abandon"], by_title["accepted then revise"]}
        chip = desk.calibration.cases.chip
        assert chip.isVisibleTo(desk) and "analyst not satisfied" in chip.text() and "(2)" in chip.text()

        refreshed = wait_signal(desk.model.sig_refreshed)
        QTest.mouseClick(view.false_reject, Qt.MouseButton.LeftButton)  # a rate opens its cases too
        await refreshed
        assert _listed(desk) == {by_title["rejected then satisfied"]}

        refreshed = wait_signal(desk.model.sig_refreshed)
        matrix = view.tables[0]
        cell = matrix.model().index(1, 2)  # rejected × abandoned
        QTest.mouseClick(matrix.viewport(), Qt.MouseButton.LeftButton, pos=matrix.visualRect(cell).center())
        await refreshed
        assert _listed(desk) == {by_title["rejected then abandon"]}

        refreshed = wait_signal(desk.model.sig_refreshed)
        chip.click()  # the chip clears the narrowing
        await refreshed
        assert len(_listed(desk)) == 5 and not chip.isVisibleTo(desk)
        view.close()

    run(qloop, scenario())
