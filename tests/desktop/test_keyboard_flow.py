"""Keyboard flow: focus, type-ahead, auto-advance, task navigation keys, dialogs and the ? sheet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import qasync
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QVBoxLayout, QWidget
from pytestqt.qtbot import QtBot

from core.config import Settings
from core.domain import TaskStatus
from core.workspace import Workspace
from desktop.dialogs.new_task import NewTaskDialog
from desktop.dialogs.revise import ReviseDialog
from desktop.dialogs.shortcuts import ShortcutSheet
from desktop.services import DeskServices
from desktop.views.task.detail import TaskDetailView
from desktop.views.task.navigation import add_navigation_actions, evidence_ids
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, run, wait_signal, wait_until
from tests.desktop.test_detail import make_dossier

S = TaskStatus


def make_window(services: DeskServices, qtbot: QtBot, ui_state: QSettings, **kwargs: Any) -> MainWindow:
    window = MainWindow(services, ui_state=ui_state, **kwargs)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitActive(window):
        window.activateWindow()
    return window


@pytest.fixture
def services(qloop: qasync.QEventLoop, workspace: Workspace) -> Iterator[DeskServices]:
    made = DeskServices.for_workspace(workspace)
    yield made
    run(qloop, made.ops.wait_idle())
    made.bridge.close()


async def go(window: MainWindow) -> None:
    refreshed = wait_signal(window.model.sig_refreshed)
    window.start()
    await refreshed


def key_to_focus(window: MainWindow, key: Qt.Key) -> None:
    """A key as the analyst types it: to whatever has focus (the window if nothing does)."""
    target = window.focusWidget() or window
    QTest.keyClick(target, key)


def test_j_after_loading_the_demo_selects_the_first_task(
    qloop: qasync.QEventLoop, workspace: Workspace, services: DeskServices, qtbot: QtBot, ui_state: QSettings
) -> None:
    made: list[str] = []

    async def demo(ws: Workspace) -> None:
        for n in range(3):
            made.append((await add_task(ws, f"demo task {n}", S.NEEDS_REVIEW, title=f"Demo {n}")).id)

    window = make_window(services, qtbot, ui_state, demo_builder=demo)

    async def scenario() -> None:
        await go(window)
        assert window.empty_state.isVisible()
        QTest.mouseClick(window.empty_state.demo_button, Qt.MouseButton.LeftButton)
        # add_task creates each task open, then moves it: the demo is in once all three are shown
        # under Needs review (a total of 3 can still count the last one as open).
        await wait_until(
            lambda: (
                len(made) == 3
                and window.model.group_count("needs_review") == 3
                and not window.empty_state.isVisible()
            ),
            what="demo",
        )
        assert window.focusWidget() is window.queue.tree  # not the filter, not a vanished button
        window.activateWindow()  # shortcuts need the active window; another test's may have taken it
        await wait_until(window.isActiveWindow, what="the desk to be the active window")
        key_to_focus(window, Qt.Key.Key_J)
        await wait_until(lambda: window.queue.selected_task_id is not None, what="J to select a task")
        # The group's rows may still be loading when J lands: wait for them rather than race them.
        await wait_until(lambda: bool(window.model.group_task_ids("needs_review")), what="the group's rows")
        first = window.model.group_task_ids("needs_review")[0]
        assert first in made and window.queue.selected_task_id == first
        assert window.queue.filter_edit.text() == ""  # nothing was typed into the filter
        assert window.model.group_count("needs_review") == 3

    run(qloop, scenario())


def test_type_ahead_never_deselects_the_task(
    qloop: qasync.QEventLoop, workspace: Workspace, services: DeskServices, qtbot: QtBot, ui_state: QSettings
) -> None:
    window = make_window(services, qtbot, ui_state)

    async def scenario() -> None:
        one = await add_task(workspace, "first", S.NEEDS_REVIEW, title="Alpha tides")
        two = await add_task(workspace, "second", S.NEEDS_REVIEW, title="Zulu venus")
        await go(window)
        shown = wait_signal(window.sig_dossier_shown)
        assert window.queue.select_task(one.id)
        await shown
        tree = window.queue.tree
        tree.setFocus()
        for key in (Qt.Key.Key_N, Qt.Key.Key_X, Qt.Key.Key_Q):  # "n" once jumped to "Needs review"
            QTest.keyClick(tree, key)
            assert window.queue.selected_task_id in (one.id, two.id)
            assert tree.currentIndex().parent().isValid()  # a task row, never a group header
        assert window.acts.satisfied.isEnabled()
        tree.keyboardSearch("z")  # type-ahead by title reaches a task
        assert window.queue.selected_task_id == two.id

    run(qloop, scenario())


def test_after_s_the_next_needs_review_task_is_selected(
    qloop: qasync.QEventLoop, workspace: Workspace, services: DeskServices, qtbot: QtBot, ui_state: QSettings
) -> None:
    window = make_window(services, qtbot, ui_state)

    async def scenario() -> None:
        tasks = [await add_task(workspace, f"task {n}", S.NEEDS_REVIEW, title=f"Task {n}") for n in range(3)]
        await go(window)
        ids = window.model.group_task_ids("needs_review")
        assert sorted(ids) == sorted(t.id for t in tasks)
        shown = wait_signal(window.sig_dossier_shown)
        assert window.queue.select_task(ids[0])
        await shown
        window.queue.tree.setFocus()
        QTest.keyClick(window.queue.tree, Qt.Key.Key_S)
        await wait_until(lambda: window.queue.selected_task_id == ids[1], what="the next task to be selected")
        await wait_until(lambda: window.model.group_count("closed") == 1, what="the first task to close")
        assert window.queue.selected_task_id == ids[1]
        assert (await workspace.store.get_task(ids[0])).status is S.CLOSED

    run(qloop, scenario())


def test_the_shortcut_sheet_lists_every_action_with_a_shortcut(
    qloop: qasync.QEventLoop, services: DeskServices, qtbot: QtBot, ui_state: QSettings
) -> None:
    window = make_window(services, qtbot, ui_state)
    window.show_shortcuts()
    sheet = window.active_dialog
    assert isinstance(sheet, ShortcutSheet)
    listed = " | ".join(keys for keys, _what in sheet.rows)
    with_keys = [a for a in window.actions() if a.shortcuts()]
    assert len(with_keys) >= 15
    for act in with_keys:
        for seq in act.shortcuts():
            assert seq.toString(QKeySequence.SequenceFormat.NativeText) in listed, act.text()
    assert "Ctrl+O" in listed and "]" in listed
    sheet.reject()


def test_brackets_switch_attempts_n_and_p_move_through_evidence_and_alt_keys_switch_tabs(
    qtbot: QtBot,
) -> None:
    holder = QWidget()
    detail = TaskDetailView(holder)
    QVBoxLayout(holder).addWidget(detail)
    add_navigation_actions(holder, detail)
    qtbot.addWidget(holder)
    holder.resize(1200, 800)
    holder.show()
    with qtbot.waitActive(holder):
        holder.activateWindow()
    detail.set_dossier(make_dossier())
    assert detail.attempt_index == 2
    QTest.keyClick(detail, Qt.Key.Key_BracketLeft)
    assert detail.attempt_index == 1
    QTest.keyClick(detail, Qt.Key.Key_BracketRight)
    assert detail.attempt_index == 2
    ids = evidence_ids(detail.evidence_view)
    assert len(ids) >= 2 and detail.evidence_view.current_evidence_id() == ids[0]
    QTest.keyClick(detail, Qt.Key.Key_N)
    assert detail.evidence_view.current_evidence_id() == ids[1]
    QTest.keyClick(detail, Qt.Key.Key_P)
    assert detail.evidence_view.current_evidence_id() == ids[0]
    tabs = detail.validator_view.tabs
    QTest.keyClick(detail, Qt.Key.Key_2, Qt.KeyboardModifier.AltModifier)
    assert tabs.currentIndex() == 1
    QTest.keyClick(detail, Qt.Key.Key_1, Qt.KeyboardModifier.AltModifier)
    assert tabs.currentIndex() == 0


def test_revise_dialog_tab_moves_focus_and_ctrl_enter_submits(qtbot: QtBot) -> None:
    dialog = ReviseDialog("A title", "Cite the tables.")
    qtbot.addWidget(dialog)
    dialog.show()
    with qtbot.waitActive(dialog):
        dialog.activateWindow()
    dialog.prompt_edit.setFocus()
    QTest.keyClick(dialog.prompt_edit, Qt.Key.Key_Tab)
    assert "\t" not in dialog.prompt and not dialog.prompt_edit.hasFocus()
    assert dialog.focusWidget() is dialog.note_edit
    with qtbot.waitSignal(dialog.accepted, timeout=5000):
        QTest.keyClick(dialog.note_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def test_new_task_dialog_tab_moves_focus_and_ctrl_enter_submits(qtbot: QtBot) -> None:
    dialog = NewTaskDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    with qtbot.waitActive(dialog):
        dialog.activateWindow()
    dialog.text_edit.setFocus()
    QTest.keyClicks(dialog.text_edit, "When is high tide?")
    QTest.keyClick(dialog.text_edit, Qt.Key.Key_Tab)
    assert dialog.request().text == "When is high tide?" and not dialog.text_edit.hasFocus()
    assert dialog.focusWidget() is dialog.title_edit
    with qtbot.waitSignal(dialog.accepted, timeout=5000):
        QTest.keyClick(dialog.title_edit, Qt.Key.Key_Enter, Qt.KeyboardModifier.ControlModifier)


def test_with_auto_advance_off_the_selection_stays_on_the_decided_task(
    qloop: qasync.QEventLoop, qtbot: QtBot, ui_state: QSettings, desk_settings: Settings
) -> None:
    settings = desk_settings.model_copy(update={"auto_advance": False})
    workspace = run(qloop, Workspace.open(settings))
    services = DeskServices.for_workspace(workspace)
    window = make_window(services, qtbot, ui_state)

    async def scenario() -> None:
        for n in range(2):
            await add_task(workspace, f"task {n}", S.NEEDS_REVIEW, title=f"Task {n}")
        await go(window)
        first = window.model.group_task_ids("needs_review")[0]
        shown = wait_signal(window.sig_dossier_shown)
        assert window.queue.select_task(first)
        await shown
        window.satisfied()
        await wait_until(lambda: window.model.group_count("closed") == 1, what="the task to close")
        await services.ops.wait_idle()
        assert window.queue.selected_task_id == first

    try:
        run(qloop, scenario())
    finally:
        run(qloop, services.ops.wait_idle())
        run(qloop, window.live.close())
        services.bridge.close()
        run(qloop, workspace.close())
