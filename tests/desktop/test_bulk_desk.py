"""Bulk work on the desk (issue 19, points 6-8): multi-select, one event per task, skips named,
progress with a Cancel that stops between tasks and leaves no file."""

from __future__ import annotations

from pathlib import Path

import qasync
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtTest import QTest

from core.domain import TaskStatus
from core.domain.facts import EventKind
from core.tasks.claims import Claims
from core.workspace import Workspace
from desktop.views.queue.bulk import BulkConfirmDialog
from desktop.views.window.main_window import MainWindow
from tests.core.bulk_seed import seed_reviewable
from tests.desktop.conftest import run, select, started, wait_signal, wait_until

S = TaskStatus


async def _confirm_dialog(desk: MainWindow) -> BulkConfirmDialog:
    await wait_until(lambda: isinstance(desk.bulk.dialog, BulkConfirmDialog), what="the confirmation")
    dialog = desk.bulk.dialog
    assert isinstance(dialog, BulkConfirmDialog)
    return dialog


def _cancel_after(desk: MainWindow, k: int) -> None:
    """Click the progress dialog's Cancel once ``k`` tasks are done (from the progress signal)."""

    def step(done: int, _total: int) -> None:
        if done == k and desk.bulk.progress is not None:
            desk.bulk.progress.canceled.emit()  # what the Cancel button sends

    desk.bulk.sig_progress.connect(step)


def test_bulk_satisfied_on_50_tasks_gives_50_events(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        ids = await seed_reviewable(workspace.store, 50)
        await started(desk)
        await select(desk, ids[0])
        assert not desk.bulk.summary.isVisible()  # one task: the desk as before
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        assert sorted(desk.queue.selected_task_ids()) == sorted(ids)
        assert desk.bulk.summary.label.text() == "50 tasks selected" and desk.bulk.summary.isVisible()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S)  # S with several selected asks about them all
        dialog = await _confirm_dialog(desk)
        assert dialog.message_label.text().startswith("Close as satisfied 50 task(s)?")
        finished = wait_signal(desk.bulk.sig_finished)
        dialog.confirm_button.click()
        (message,) = await finished
        assert message == "Close as satisfied: 50 of 50 done"
        for task_id in ids:
            events = await workspace.store.get_task_events(
                task_id, kinds=[EventKind.ANALYST_FEEDBACK_RECORDED]
            )
            assert [e.payload["action"] for e in events] == ["satisfied"]
            assert (await workspace.store.get_task(task_id)).status is S.CLOSED
        await wait_until(lambda: desk.model.group_count("closed") == 50, what="the queue to follow")

    run(qloop, scenario())


def test_cancel_after_k_stops_exactly_there(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        ids = await seed_reviewable(workspace.store, 10)
        await started(desk)
        await select(desk, ids[0])
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        desk.bulk.ask_action("abandon")
        dialog = await _confirm_dialog(desk)
        dialog.note_edit.setText("duplicates")
        _cancel_after(desk, 4)
        finished = wait_signal(desk.bulk.sig_finished)
        dialog.confirm_button.click()
        (message,) = await finished
        assert message == "Abandon: 4 of 10 done (cancelled)"
        statuses = [(await workspace.store.get_task(i)).status for i in ids]
        assert statuses.count(S.ABANDONED) == 4 and statuses.count(S.AWAITING_FEEDBACK) == 6

    run(qloop, scenario())


def test_claimed_by_other_and_read_only_tasks_are_skipped_and_named(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        ids = await seed_reviewable(workspace.store, 3)
        imported = await workspace.store.create_task(
            "from elsewhere", title="Imported answer", read_only=True, origin="bundle:feedbeef"
        )
        await workspace.store.update_task(imported.id, status=S.AWAITING_FEEDBACK)
        await Claims(workspace.store).claim(ids[1], "colleague")
        await started(desk)
        await select(desk, ids[0])
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        assert len(desk.queue.selected_task_ids()) == 4
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S)
        dialog = await _confirm_dialog(desk)
        text = dialog.message_label.text()
        assert text.startswith("Close as satisfied 2 task(s)? 2 skipped:")
        assert "“Task 01”: claimed by colleague" in text and "“Imported answer”: read-only" in text
        finished = wait_signal(desk.bulk.sig_finished)
        dialog.confirm_button.click()
        (message,) = await finished
        assert message == "Close as satisfied: 2 of 2 done; 2 skipped"
        assert (await workspace.store.get_task(ids[1])).status is S.AWAITING_FEEDBACK
        assert (await workspace.store.get_task(imported.id)).status is S.AWAITING_FEEDBACK

    run(qloop, scenario())


def test_group_headers_never_join_the_selection(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        ids = await seed_reviewable(workspace.store, 2)
        other = await seed_reviewable(workspace.store, 2, status=S.NEEDS_REVIEW, prefix="Review")
        await started(desk)
        await select(desk, ids[0])
        model, tree = desk.model, desk.queue.tree
        first = model.index_of_task(other[0])
        last = model.index_of_task(ids[1])
        flags = QItemSelectionModel.SelectionFlag
        tree.selectionModel().select(first, flags.ClearAndSelect | flags.Rows)
        for task_id in (other[1], ids[0], ids[1]):
            tree.selectionModel().select(model.index_of_task(task_id), flags.Select | flags.Rows)
        for gi in range(model.rowCount()):  # what a Shift-click across groups adds
            tree.selectionModel().select(model.index(gi, 0), flags.Select | flags.Rows)
        assert last.isValid()
        assert sorted(desk.queue.selected_task_ids()) == sorted(ids + other)
        rows = tree.selectionModel().selectedRows(0)
        assert all(r.parent().isValid() for r in rows), "a group header is selected"
        assert desk.bulk.summary.label.text() == "4 tasks selected"
        # Ctrl+A selects within the current task's group only.
        await select(desk, other[0])
        tree.setFocus()
        QTest.keyClick(tree, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        assert sorted(desk.queue.selected_task_ids()) == sorted(other)

    run(qloop, scenario())


def test_report_from_the_desk_cancelled_leaves_no_file_then_written(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, tmp_path: Path
) -> None:
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()

    async def scenario() -> None:
        ids = await seed_reviewable(workspace.store, 5)
        await started(desk)
        await select(desk, ids[0])
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        desk.bulk.choose_path = lambda _title, _filters, then: then(str(out))
        _cancel_after(desk, 2)
        finished = wait_signal(desk.bulk.sig_finished)
        desk.bulk.act_report.trigger()
        (message,) = await finished
        assert message == "report cancelled after 2 of 5 task(s); no file was written"
        assert list(out.parent.iterdir()) == []
        desk.bulk.sig_progress.disconnect()
        finished = wait_signal(desk.bulk.sig_finished)
        desk.bulk.act_report.trigger()
        (message,) = await finished
        assert message.startswith("Report of 5 task(s)") and out.is_file()
        html = out.read_text(encoding="utf-8")
        assert html.count('<section class="task"') == 5 and "Task 04" in html
        await desk.ops.wait_idle()

    run(qloop, scenario())


def test_a_desk_export_says_when_it_is_unsigned_and_who_signed_it_otherwise(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, tmp_path: Path
) -> None:
    """Issue 30, point 9: with no keyring the bundle is unsigned, and the desk says so."""
    import keyring
    from keyring.backends.fail import Keyring as FailKeyring

    from tests.keyrings import MemoryKeyring

    previous = keyring.get_keyring()

    async def export(name: str) -> str:
        out = tmp_path / name
        desk.bulk.choose_path = lambda _title, _filters, then: then(str(out))
        finished = wait_signal(desk.bulk.sig_finished)
        desk.bulk.act_export.trigger()
        (message,) = await finished
        assert out.is_file(), message
        return str(message)

    async def scenario() -> None:
        ids = await seed_reviewable(workspace.store, 2)
        await started(desk)
        await select(desk, ids[0])
        keyring.set_keyring(FailKeyring())
        assert (await export("unsigned.zip")).endswith(", unsigned (no OS keyring for the signing key)")
        keyring.set_keyring(MemoryKeyring())
        assert ", signed by " in await export("signed.zip")
        await desk.ops.wait_idle()

    try:
        run(qloop, scenario())
    finally:
        keyring.set_keyring(previous)
