"""Reason codes on the desk: one key picks a reason in the Abandon, Revise and Override dialogs,
and it is stored with the decision."""

from __future__ import annotations

import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from core.domain import TaskStatus
from core.domain.reasons import DEFAULT_REASONS
from core.workspace import Workspace
from desktop.dialogs.confirm import ConfirmDialog
from desktop.dialogs.reason_picker import ReasonPicker, attach_reason_picker
from desktop.dialogs.revise import ReviseDialog
from desktop.views.task.override import OverrideDialog
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, run, select, started, wait_until


def test_a_with_a_reason_key_stores_the_reason(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, "not worth it", TaskStatus.AWAITING_FEEDBACK)
        await started(desk)
        await select(desk, task.id)
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_A)
        dialog = desk.active_dialog
        assert isinstance(dialog, ConfirmDialog)
        picker = dialog.findChild(ReasonPicker)
        assert picker is not None and picker.reason is None
        dialog.confirm_button.setFocus()
        QTest.keyClick(dialog.confirm_button, Qt.Key.Key_2)  # one key: "missing part"
        assert picker.reason == "missing_part"
        dialog.confirm_button.click()
        await wait_until(lambda: desk.model.group_count("abandoned") == 1, what="the task to be abandoned")
        (row,) = [f for f in await workspace.store.list_feedback(task.id) if f.action == "abandon"]
        assert row.reason == "missing_part"

    run(qloop, scenario())


def test_every_dialog_takes_a_reason_by_one_key(qtbot: QtBot) -> None:
    revise = ReviseDialog("t", "do better")
    qtbot.addWidget(revise)
    picker = attach_reason_picker(revise, DEFAULT_REASONS)
    revise.show()
    QTest.keyClick(revise.prompt_edit, Qt.Key.Key_3)  # typed into the prompt, not a reason
    assert "3" in revise.prompt and picker.reason is None
    QTest.keyClick(revise.prompt_edit, Qt.Key.Key_3, Qt.KeyboardModifier.AltModifier)  # Alt+3: from anywhere
    assert picker.reason == "unsupported_claim"
    override = OverrideDialog(1)
    qtbot.addWidget(override)
    picker = attach_reason_picker(override, DEFAULT_REASONS)
    override.show()
    QTest.keyClick(override.status_combo, Qt.Key.Key_4, Qt.KeyboardModifier.AltModifier)
    assert picker.reason == "wrong_source"
    ok = override.findChildren(QDialogButtonBox)[0].buttons()[0]
    QTest.keyClick(ok, Qt.Key.Key_7)  # focus on a button: the plain digit picks
    assert picker.reason == "other"
    QTest.keyClick(ok, Qt.Key.Key_0)
    assert picker.reason is None
