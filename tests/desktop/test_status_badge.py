"""The status pill is drawn once into a pixmap and reused: it must still land in its cell, in its colour."""

from __future__ import annotations

import qasync
from PySide6.QtGui import QColor
from pytestqt.qtbot import QtBot

from core.domain import TaskStatus
from core.tasks.queue import TaskQueue
from core.workspace import Workspace
from desktop.models.queue_model import COL_STATUS, TaskQueueModel
from desktop.ops import CoreOps
from desktop.presentation import STATUS_COLOURS
from desktop.views.queue.view import QueueView, StatusBadgeDelegate
from tests.desktop.conftest import add_task, run

S = TaskStatus


def test_each_row_shows_its_own_status_pill(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot
) -> None:
    model = TaskQueueModel(TaskQueue(workspace.store), CoreOps())
    view = QueueView(model)
    qtbot.addWidget(view)
    view.resize(560, 400)
    view.show()

    async def scenario() -> None:
        for i, status in enumerate((S.NEEDS_REVIEW, S.FAILED, S.FAILED, S.CLOSED)):
            await add_task(workspace, f"task {i}", status)
        await model.refresh()

    run(qloop, scenario())
    delegate = view.tree.itemDelegateForColumn(COL_STATUS)
    assert isinstance(delegate, StatusBadgeDelegate)
    for _ in range(2):  # the second paint draws from the remembered pixmaps
        shot = view.tree.viewport().grab().toImage()
        for key, status in (("needs_review", S.NEEDS_REVIEW), ("failed", S.FAILED), ("closed", S.CLOSED)):
            for row in range(model.rowCount(model.group_index(key))):
                rect = view.tree.visualRect(model.index(row, COL_STATUS, model.group_index(key)))
                # Mid-height, past the rounded end and before the label (7 px in): the colour itself.
                pixel = QColor(shot.pixel(rect.left() + 2 + 5, rect.top() + rect.height() // 2))
                assert pixel == QColor(STATUS_COLOURS[status]), (key, row)
    assert len(delegate._pills) == 3  # one per status shown: the two failed rows share theirs
