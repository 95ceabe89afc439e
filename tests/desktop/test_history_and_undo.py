"""Issue 15 at the desk: a failed revision stays reviewable, undo (Ctrl+Z), reopen, the History tab,
notes typed from the keyboard, and read-only tasks that say why nothing is allowed."""

from __future__ import annotations

import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from core.domain import TaskStatus
from core.domain.facts import EventKind
from core.workspace import Workspace
from desktop.dialogs.note import NoteDialog
from desktop.dialogs.revise import ReviseDialog
from desktop.models.queue_model import COL_TITLE
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, run, select, started, wait_until
from tests.desktop.test_main_window import desk as desk  # the window fixture
from tests.desktop.test_main_window import press

S = TaskStatus


async def back_to(window: MainWindow) -> None:
    """The offscreen platform leaves a closed dialog the active window; a window manager would give
    activation back to the desk, so the test does, before pressing the desk's keys."""
    window.activateWindow()
    await wait_until(lambda: QApplication.activeWindow() is window, what="the desk to be active again")


def test_a_revision_whose_provider_fails_stays_in_review_with_the_failure_shown(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        # The REVIEWME conversation has one agent turn: the revision's request runs past the script.
        task = await desk.services.tasks.create("REVIEWME: Venus and bees?")
        await desk.services.tasks.run(task.id)
        await started(desk)
        await select(desk, task.id)
        press(desk, Qt.Key.Key_R)
        dialog = desk.active_dialog
        assert isinstance(dialog, ReviseDialog)
        dialog.buttons.accepted.emit()
        await wait_until(lambda: desk.services.tasks.is_running_here(task.id), what="the revision to start")
        await wait_until(lambda: not desk.services.tasks.is_running_here(task.id), what="the revision to end")
        stored = await workspace.store.get_task(task.id)
        assert stored.status is S.NEEDS_REVIEW and stored.attempt_count == 2
        await wait_until(lambda: desk.detail.failure_label.isVisible(), what="the failure to be shown")
        assert (
            "Attempt 2 produced no usable answer (the model call failed)" in desk.detail.failure_label.text()
        )
        assert desk.detail.attempt_index == 1  # the answer under review, not the empty attempt
        history = [row[2] for row in desk.detail.history_view.rows()]
        assert any("attempt 2 produced no usable answer" in what for what in history)
        assert desk.acts.satisfied.isEnabled()
        await back_to(desk)
        press(desk, Qt.Key.Key_S)
        await wait_until(lambda: desk.model.group_count("closed") == 1, what="S to close it")
        assert (await workspace.store.get_task(task.id)).status is S.CLOSED

    run(qloop, scenario())


def test_ctrl_z_undoes_s_and_both_events_are_recorded(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, "is the answer good?", S.NEEDS_REVIEW)
        await started(desk)
        await select(desk, task.id)
        press(desk, Qt.Key.Key_S)
        await wait_until(lambda: desk.model.group_count("closed") == 1, what="the task to close")
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        await wait_until(lambda: desk.model.group_count("needs_review") == 1, what="undo to reopen it")
        assert (await workspace.store.get_task(task.id)).status is S.NEEDS_REVIEW
        events = await workspace.store.get_task_events(task.id, kinds=[EventKind.ANALYST_FEEDBACK_RECORDED])
        assert [(e.payload["action"], e.payload["to"]) for e in events] == [
            ("satisfied", "closed"),
            ("undo", "needs_review"),
        ]

    run(qloop, scenario())


def test_history_lists_decisions_with_notes_typed_from_the_keyboard(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await desk.services.tasks.run((await desk.services.tasks.create("noted decision")).id)
        assert task.status is S.AWAITING_FEEDBACK
        await started(desk)
        await select(desk, task.id)
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S, Qt.KeyboardModifier.ShiftModifier)
        dialog = desk.active_dialog
        assert isinstance(dialog, NoteDialog)
        assert dialog.focusWidget() is dialog.note_edit  # type at once, no mouse
        QTest.keyClicks(dialog.note_edit, "checked the tide tables")
        QTest.keyClick(dialog.note_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        await wait_until(lambda: desk.model.group_count("closed") == 1, what="the noted close")
        await wait_until(
            lambda: any("satisfied" in r[2] for r in desk.detail.history_view.rows()), what="the history row"
        )
        decision = next(r for r in desk.detail.history_view.rows() if "satisfied" in r[2])
        assert decision[2] == "satisfied: awaiting_feedback → closed"
        assert decision[3] == "checked the tide tables" and decision[1]  # the reviewer's name
        # Reopen (O) asks for a reason in the same way; the reason joins the history.
        await wait_until(lambda: desk.review_moves.act_reopen.isEnabled(), what="reopen to be offered")
        await back_to(desk)
        press(desk, Qt.Key.Key_O)
        reopen = desk.active_dialog
        assert isinstance(reopen, NoteDialog) and reopen is not dialog
        QTest.keyClick(reopen.note_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert reopen.isVisible() and reopen.error_label.text()  # a reason is required
        QTest.keyClicks(reopen.note_edit, "source retracted")
        QTest.keyClick(reopen.note_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        await wait_until(lambda: desk.model.group_count("needs_review") == 1, what="the task to reopen")
        await wait_until(
            lambda: any(r[3] == "source retracted" for r in desk.detail.history_view.rows()),
            what="reopen row",
        )

    run(qloop, scenario())


def test_read_only_tasks_disable_actions_and_say_why(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(
            workspace, "imported", S.AWAITING_FEEDBACK, read_only=True, origin="bundle:" + "ab12" * 16
        )
        await started(desk)
        await select(desk, task.id)
        for act in (desk.acts.satisfied, desk.acts.revise, desk.acts.abandon):
            assert not act.isEnabled()
            assert "read-only: imported from case bundle ab12ab12ab12" in act.toolTip()
        assert not desk.review_moves.act_undo.isEnabled() and not desk.review_moves.act_reopen.isEnabled()
        assert desk.detail.failure_label.text().startswith(
            "Read-only: imported from case bundle ab12ab12ab12"
        )
        row = desk.model.index_of_task(task.id).siblingAtColumn(COL_TITLE)
        assert row.data() == f"[read-only] {task.title}"  # marked in the queue too, not only when opened
        assert str(row.data(Qt.ItemDataRole.ToolTipRole)).startswith("Read-only: imported from case bundle")

    run(qloop, scenario())


def test_ctrl_z_acts_on_the_selected_tasks_last_decision(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    """Issue 30, point 7: S on A, S on B, then A selected: Ctrl+Z undoes A's decision, not B's."""

    async def scenario() -> None:
        first = await add_task(workspace, "first answer to judge", S.NEEDS_REVIEW)
        second = await add_task(workspace, "second answer to judge", S.NEEDS_REVIEW)
        await started(desk)
        for task in (first, second):
            await select(desk, task.id)
            await back_to(desk)
            press(desk, Qt.Key.Key_S)
            await wait_until(
                lambda t=task: desk.model.task(t.id) is not None and desk.model.task(t.id).status is S.CLOSED,
                what="S to close it",
            )
        await select(desk, first.id)
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        await wait_until(lambda: desk.model.group_count("needs_review") == 1, what="undo to reopen one")
        assert (await workspace.store.get_task(first.id)).status is S.NEEDS_REVIEW
        assert (await workspace.store.get_task(second.id)).status is S.CLOSED
        await desk.ops.wait_idle()

    run(qloop, scenario())
