"""The Calibration window's batch chooser, and headers that are read whole at the window's size."""

from __future__ import annotations

import qasync
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from core.calibration import calibrate, calibration_batches
from core.workspace import Workspace
from desktop.ops import CoreOps
from desktop.views.insight.calibration import WINDOW_SIZE, CalibrationView
from tests.core.test_calibration_batch import queue
from tests.desktop.conftest import run


def test_the_batch_chooser_narrows_the_figures_to_one_batch(
    qtbot: QtBot, qloop: qasync.QEventLoop, workspace: Workspace
) -> None:
    store = workspace.store
    run(qloop, queue(store, "north", [("accepted", "satisfied", False), ("accepted", "revise", False)]))
    run(qloop, queue(store, "south", [("rejected", "abandon", False)]))
    ops = CoreOps()
    view = CalibrationView(ops, lambda f: calibrate(store, f), batches=lambda: calibration_batches(store))
    qtbot.addWidget(view)
    view.refresh()
    run(qloop, ops.wait_idle())
    assert view.batches_loaded and view.calibration is not None and view.calibration.n == 3
    combo = view.batch_combo
    assert [combo.itemText(i) for i in range(combo.count())] == [
        "any batch",
        "north (north.csv)",
        "south (south.csv)",
    ]

    combo.setCurrentIndex(combo.findData("north"))
    view.refresh()
    run(qloop, ops.wait_idle())
    cal = view.calibration
    assert cal.filter.batch_id == "north" and cal.n == 2
    assert cal.matrix["accepted"] == {"satisfied": 1, "revised": 1, "abandoned": 0, "overridden": 0}
    assert cal.matrix["rejected"]["abandoned"] == 0
    assert combo.currentData() == "north"  # kept across the chooser's refill

    combo.setCurrentIndex(combo.findData("south"))
    view.refresh()
    run(qloop, ops.wait_idle())
    assert view.calibration.n == 1 and view.calibration.matrix["rejected"]["abandoned"] == 1


def test_every_header_fits_at_the_windows_default_size(
    qtbot: QtBot, qloop: qasync.QEventLoop, workspace: Workspace
) -> None:
    store = workspace.store
    run(qloop, queue(store, "north", [("accepted", "satisfied", False), ("accepted", None, True)]))
    ops = CoreOps()
    view = CalibrationView(ops, lambda f: calibrate(store, f), batches=lambda: calibration_batches(store))
    qtbot.addWidget(view)
    view.resize(*WINDOW_SIZE)  # what Review → Calibration… opens
    view.show()
    qtbot.waitExposed(view)
    view.refresh()
    run(qloop, ops.wait_idle())
    qtbot.waitUntil(lambda: all(t.horizontalHeader().length() > 0 for t in view.tables), timeout=5000)
    for table in view.tables:
        header = table.horizontalHeader()
        model = table.model()
        for section in range(header.count()):
            text = model.headerData(section, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole)
            needed = header.fontMetrics().horizontalAdvance(text)
            assert header.sectionSize(section) >= needed, f"{text!r} is clipped"
        assert table.horizontalScrollBar().maximum() == 0  # fits the window, no sideways scrolling
    placeholder = view.model_edit.placeholderText()
    assert view.model_edit.width() >= view.model_edit.fontMetrics().horizontalAdvance(placeholder)
    matrix = view.tables[0]
    assert matrix.verticalScrollBar().maximum() == 0  # every validator status shows
