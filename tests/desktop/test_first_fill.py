"""Deferred start-up work waits until the filled queue is on screen, not merely loaded.

The view paints a reset model from a zero-length timer of its own; work scheduled the same way
used to run first, so the analyst saw the rows only after the search feature had installed.
These tests look at the order of events (a paint with rows, then the deferred work), never at
how long anything took.
"""

from __future__ import annotations

from collections.abc import Callable

import qasync
from PySide6.QtCore import QEvent, QObject, QSettings
from pytestqt.qtbot import QtBot

from core.workspace import Workspace
from tests.desktop.conftest import add_task, quiet_desk, run, wait_until


class PaintLog(QObject):
    """Records, for each paint of a widget, whether the model had its rows by then."""

    def __init__(self, widget: QObject, state: Callable[[], tuple[bool, bool]]) -> None:
        super().__init__(widget)
        self.state = state
        self.paints: list[tuple[bool, bool]] = []
        """(rows loaded, a deferred feature installed) at each paint."""
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.paints.append(self.state())
        return False


def test_deferred_work_runs_after_the_filled_queue_is_painted(
    qloop: qasync.QEventLoop, qtbot: QtBot, workspace: Workspace, ui_state: QSettings
) -> None:
    from desktop.services import DeskServices
    from desktop.views.window.main_window import MainWindow

    async def scenario() -> None:
        await add_task(workspace, "What do the tide tables say about Tuesday?")
        services = DeskServices.for_workspace(workspace)
        window = MainWindow(services, ui_state=ui_state, defer_features=True)
        qtbot.addWidget(window)
        log = PaintLog(
            window.queue.tree.viewport(), lambda: (window.model.loaded_once, hasattr(window, "search_panel"))
        )
        ran: list[bool] = []
        window.after_first_fill(lambda: ran.append(window.model.loaded_once))
        window.show()
        window.start()
        await wait_until(lambda: bool(ran) and not window.first_fill.pending, what="deferred work")
        assert ran == [True] and window.first_fill.painted
        first_with_rows = next(p for p in log.paints if p[0])
        assert first_with_rows == (True, False)  # the rows showed before any deferred feature installed
        # Every deferred feature still installed (deferred, never dropped).
        assert all(hasattr(window, name) for name in ("search_panel", "team", "bulk"))
        await quiet_desk(window)
        window.close()

    run(qloop, scenario())


def test_a_queue_not_on_screen_runs_deferred_work_without_waiting_for_a_paint(
    qloop: qasync.QEventLoop, qtbot: QtBot, workspace: Workspace, ui_state: QSettings
) -> None:
    from desktop.services import DeskServices
    from desktop.views.window.main_window import MainWindow

    async def scenario() -> None:
        services = DeskServices.for_workspace(workspace)
        window = MainWindow(services, ui_state=ui_state, defer_features=True)
        qtbot.addWidget(window)
        log = PaintLog(window.queue.tree.viewport(), lambda: (window.model.loaded_once, False))
        ran: list[bool] = []
        window.after_first_fill(lambda: ran.append(window.model.loaded_once))
        window.start()  # never shown: no paint will come
        await wait_until(lambda: bool(ran), what="deferred work")
        assert ran == [True] and log.paints == [] and window.first_fill.painted
        await quiet_desk(window)
        window.close()

    run(qloop, scenario())
