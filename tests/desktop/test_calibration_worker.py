"""The Calibration window computes its figures off the GUI thread (desktop/views/insight/calibration_worker.py)."""

from __future__ import annotations

import pytest
import qasync

from core.workspace import Workspace
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import HANG_S, run, started, wait_signal
from tests.desktop.test_calibration_view import seed


@pytest.mark.qt_log_ignore("^This plugin does not support raise\\(\\)$")  # offscreen: no window manager
def test_the_figures_are_computed_while_the_gui_thread_is_held(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        for status, action in (("accepted", "satisfied"), ("accepted", "revise"), ("rejected", "satisfied")):
            await seed(workspace, status, action)
        revised = next(t.id for t in await workspace.store.list_tasks() if t.title == "accepted then revise")
        await started(desk)

        view = desk.calibration.open()
        loaded = wait_signal(view.sig_loaded)
        worker = desk.calibration.worker
        assert worker is not None and worker.computing is not None
        # The GUI thread blocks here and its loop turns no more: only work on another thread can finish.
        figures = worker.computing.result(timeout=HANG_S)
        assert figures.n == 3 and figures.cases is not None
        assert figures.cases["false_accept"] == [revised]
        await loaded  # then delivered to the window on the GUI loop
        assert view.calibration == figures
        assert "3 decided attempts" in view.summary.text()
        view.close()

    run(qloop, scenario())
