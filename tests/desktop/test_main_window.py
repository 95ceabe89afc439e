from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.domain import FeedbackAction, TaskStatus
from core.workspace import Workspace
from desktop.dialogs.confirm import ConfirmDialog
from desktop.dialogs.new_task import NewTaskDialog
from desktop.dialogs.revise import ReviseDialog
from desktop.services import DeskServices
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, gates, run, select, started, wait_signal, wait_until

S = TaskStatus


@pytest.fixture
def desk(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, ui_state: QSettings
) -> Iterator[MainWindow]:
    services = DeskServices.for_workspace(workspace)
    window = MainWindow(services, ui_state=ui_state)
    qtbot.addWidget(window)
    window.show()
    yield window
    run(qloop, services.ops.wait_idle())
    for task in run(qloop, workspace.store.list_tasks()):
        run(qloop, services.tasks.cancel(task.id))  # False, and nothing done, unless it runs here
    services.bridge.close()


def press(window: MainWindow, key: Qt.Key) -> None:
    window.queue.tree.setFocus()
    QTest.keyClick(window.queue.tree, key)


def test_s_closes_a_task_in_the_database(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, "is the answer good?", S.NEEDS_REVIEW)
        await started(desk)
        await select(desk, task.id)
        assert desk.acts.satisfied.isEnabled()
        press(desk, Qt.Key.Key_S)
        await wait_until(lambda: desk.model.group_count("closed") == 1, what="the task to close")
        assert (await workspace.store.get_task(task.id)).status is S.CLOSED
        # The selection followed the row into Closed, where Satisfied is no longer allowed.
        await wait_until(lambda: not desk.acts.satisfied.isEnabled(), what="actions to refresh")
        assert desk.queue.selected_task_id == task.id

    run(qloop, scenario())


def test_a_abandons_after_confirmation(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, "not worth it", S.AWAITING_FEEDBACK)
        await started(desk)
        await select(desk, task.id)
        press(desk, Qt.Key.Key_A)
        dialog = desk.active_dialog
        assert isinstance(dialog, ConfirmDialog)
        dialog.confirm_button.click()
        await wait_until(lambda: desk.model.group_count("abandoned") == 1, what="the task to be abandoned")
        assert (await workspace.store.get_task(task.id)).status is S.ABANDONED

    run(qloop, scenario())


def test_r_revises_with_the_recommended_prompt_and_runs_again(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await desk.services.tasks.create("REVIEWME: when is high tide?")
        await desk.services.tasks.run(task.id)
        assert (await workspace.store.get_task(task.id)).status is S.NEEDS_REVIEW
        await started(desk)
        await select(desk, task.id)
        press(desk, Qt.Key.Key_R)
        dialog = desk.active_dialog
        assert isinstance(dialog, ReviseDialog)
        assert dialog.prompt == "Cite the tide tables."  # the validator's recommendation
        dialog.prompt_edit.setPlainText("Cite the tide tables, please")
        dialog.buttons.accepted.emit()
        await wait_until(
            lambda: desk.services.tasks.is_running_here(task.id), what="the new attempt to start"
        )
        feedback = await workspace.store.list_feedback(task.id)
        assert [f.action for f in feedback] == [FeedbackAction.REVISE.value]
        assert feedback[0].prompt == "Cite the tide tables, please"
        await wait_until(
            lambda: not desk.services.tasks.is_running_here(task.id), what="the new attempt to end"
        )
        stored = await workspace.store.get_task(task.id)
        assert stored.attempt_count == 2 and stored.status is not S.NEEDS_REVISION

    run(qloop, scenario())


def test_buttons_follow_core_and_conflicts_reload(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, "two analysts", S.NEEDS_REVIEW)
        closed = await add_task(workspace, "already done", S.CLOSED)
        await started(desk)
        await select(desk, closed.id)
        assert not desk.acts.satisfied.isEnabled() and not desk.acts.abandon.isEnabled()
        press(desk, Qt.Key.Key_S)  # disabled: nothing may happen
        await select(desk, task.id)
        # Someone else closes it behind our back (no event reaches this desk).
        await workspace.store.update_task(task.id, status=S.CLOSED)
        desk.satisfied()
        await wait_until(lambda: desk.message_bar.isVisible(), what="the conflict message")
        assert "changed since it was read" in desk.message_bar.label.text()
        await wait_until(lambda: desk.model.group_count("closed") == 2, what="the task to be reloaded")
        assert (await workspace.store.get_task(closed.id)).version == closed.version

    run(qloop, scenario())


def test_j_k_walk_the_queue_and_skip_headers(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        first = await add_task(workspace, "review me", S.NEEDS_REVIEW)
        second = await add_task(workspace, "accepted one", S.AWAITING_FEEDBACK)
        await started(desk)
        press(desk, Qt.Key.Key_J)
        assert desk.queue.selected_task_id == first.id
        press(desk, Qt.Key.Key_J)
        assert desk.queue.selected_task_id == second.id
        press(desk, Qt.Key.Key_K)
        assert desk.queue.selected_task_id == first.id
        press(desk, Qt.Key.Key_Slash)
        assert desk.queue.filter_edit.hasFocus()

    run(qloop, scenario())


def test_new_task_runs_live_and_lands_in_its_group(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        await started(desk)
        assert desk.empty_state.isVisible()
        QTest.keySequence(desk, "Ctrl+N")
        dialog = desk.active_dialog
        assert isinstance(dialog, NewTaskDialog)
        dialog.text_edit.setPlainText("SLOWTASK: summarise the tide report")
        dialog.create_button.click()
        await wait_until(lambda: desk.queue.selected_task_id is not None, what="the new task to be selected")
        task_id = desk.queue.selected_task_id
        assert task_id is not None
        assert not desk.empty_state.isVisible()
        # The run's model call is held, so the run is live for as long as the desk needs to show it.
        await gates(workspace).wait_arrived("SLOWTASK")
        await wait_until(lambda: desk.progress_strip.isVisible(), what="live progress")
        await wait_until(lambda: "attempt 1" in desk.progress_strip.label.text(), what="the attempt number")
        await wait_until(lambda: task_id in desk.model.group_task_ids("active"), what="the active group")
        gates(workspace).release("SLOWTASK")
        await wait_until(
            lambda: task_id in desk.model.group_task_ids("awaiting_feedback"), what="the run to land"
        )
        assert desk.queue.selected_task_id == task_id  # never reselected by hand
        await wait_until(lambda: not desk.progress_strip.isVisible(), what="the progress strip to go")
        await wait_until(lambda: desk.acts.satisfied.isEnabled(), what="review actions")
        assert desk.model.group_count("active") == 0

    run(qloop, scenario())


def test_bad_team_file_keeps_the_dialog_and_its_text(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, tmp_path: object
) -> None:
    async def scenario() -> None:
        await started(desk)
        desk.new_task()
        dialog = desk.active_dialog
        assert isinstance(dialog, NewTaskDialog)
        dialog.text_edit.setPlainText("keep this text")
        dialog.team_file.setChecked(True)
        dialog.team_path.setText("/nonexistent/team.toml")
        dialog.create_button.click()
        await wait_until(lambda: dialog.error_label.isVisible() and dialog.isVisible(), what="the error")
        assert dialog.text_edit.toPlainText() == "keep this text"
        assert await workspace.store.list_tasks() == []

    run(qloop, scenario())


def test_window_state_persists(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, ui_state: QSettings, qtbot: QtBot
) -> None:
    desk.resize(760, 640)
    desk.splitter.setSizes([250, 460])
    sizes = desk.splitter.sizes()
    desk.close()
    again = MainWindow(DeskServices.for_workspace(workspace), ui_state=ui_state)
    qtbot.addWidget(again)
    again.show()
    assert again.width() == 760 and abs(again.height() - 640) <= 10
    assert again.splitter.sizes() == sizes
    again.services.bridge.close()


def test_open_case_bundle_reports_a_non_bundle_and_opens_a_real_one(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, tmp_path: Path
) -> None:
    from core.bundle import export_bundle

    async def scenario() -> None:
        await started(desk)
        bogus = tmp_path / "notes.zip"
        bogus.write_text("not a zip at all")
        desk.open_case_bundle(str(bogus))
        await wait_until(lambda: "Cannot open case bundle" in desk.message_bar.text(), what="error message")
        assert desk.bundle_windows == []
        task = await add_task(workspace, "bundled task")
        good = tmp_path / "case.zip"
        await export_bundle(workspace.store, [task.id], good, environ={})
        desk.open_case_bundle(str(good))
        await wait_until(lambda: len(desk.bundle_windows) == 1, what="bundle window")
        assert "verified" in desk.bundle_windows[0].banner.text()  # type: ignore[attr-defined]
        desk.bundle_windows[0].close()
        # Closed is gone: the window, its bundle's records and open zip streams are not kept.
        await wait_until(lambda: desk.bundle_windows == [], what="closed bundle window forgotten")

    run(qloop, scenario())


def test_bundle_windows_closed_while_they_load_are_forgotten_without_errors(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, tmp_path: Path
) -> None:
    """A bundle window closed at once, its first task's evidence still being read from the zip:
    the read's end finds the window gone and says nothing, and the desk keeps no window."""
    from core.bundle import export_bundle

    async def scenario() -> None:
        await started(desk)
        task = await add_task(workspace, "bundled task")
        case = tmp_path / "case.zip"
        await export_bundle(workspace.store, [task.id], case, environ={})
        for opened in range(1, 4):
            desk.open_case_bundle(str(case))
            await wait_until(lambda: len(desk.bundle_windows) == 1, what=f"bundle window {opened}")
            desk.bundle_windows[0].close()  # its evidence reads are in flight or just done
            await wait_until(lambda: desk.bundle_windows == [], what=f"bundle window {opened} forgotten")
        await desk.ops.wait_idle()
        assert "failed" not in desk.message_bar.text()  # and the qloop fixture saw no loop error

    run(qloop, scenario())


def test_outcome_column_sorts_in_the_store(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        await add_task(workspace, "one", S.NEEDS_REVIEW, validation_outcome="force_accepted")
        await add_task(workspace, "two", S.NEEDS_REVIEW, validation_outcome="accepted")
        await started(desk)
        refreshed = wait_signal(desk.model.sig_refreshed)
        desk.model.sort(2, Qt.SortOrder.AscendingOrder)  # the Outcome column
        await refreshed
        tasks = await workspace.store.list_tasks(order_by="validation_outcome", descending=False)
        assert [t.text for t in tasks] == ["two", "one"]

    run(qloop, scenario())
