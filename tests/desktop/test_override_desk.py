"""Recording an analyst's verdict from the desk: both verdicts kept, both shown."""

from __future__ import annotations

import qasync
from pytestqt.qtbot import QtBot

from core.domain import TaskStatus
from core.tasks.override import overrides_from_events
from core.workspace import Workspace
from desktop.views.task.override import OverrideDialog
from desktop.views.task.override_action import record_from_desk
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, run, select, started, wait_until
from tests.desktop.test_main_window import desk as desk  # the window fixture


def test_recording_a_verdict_keeps_the_validators(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, "is the answer good?", TaskStatus.AWAITING_FEEDBACK)
        store = workspace.store
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="is the answer good?")
        await store.update_attempt(
            attempt.id, final_output="Yes.", state="finished", validation_status="accepted"
        )
        await store.add_validation(
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=1,
            result={"status": "accepted", "score": 0.9},
            raw_response="{}",
            prompt=None,
            debug={},
        )
        await started(desk)
        await select(desk, task.id)
        await wait_until(lambda: desk.detail.attempt_index == 1, what="the attempt to show")
        assert not desk.detail.analyst_verdict_label.isVisibleTo(desk.detail)
        record_from_desk(desk, "rejected", "incomplete", "no source for the yes")
        label = desk.detail.analyst_verdict_label
        await wait_until(lambda: label.isVisibleTo(desk.detail), what="the analyst's verdict to show")
        assert "rejected, category incomplete — “no source for the yes”" in label.text()
        assert "the validator said accepted, kept as it was" in label.text()
        (kept,) = await store.list_validations(task.id)
        assert kept.status == "accepted"
        mine = overrides_from_events(await store.get_task_events(task.id))[1]
        assert (mine.status, mine.note) == ("rejected", "no source for the yes")

    run(qloop, scenario())


def test_the_dialog_offers_every_status_and_category(qtbot: QtBot) -> None:
    dialog = OverrideDialog(2)
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == "Your verdict on attempt 2"
    dialog.status_combo.setCurrentIndex(dialog.status_combo.findData("insufficient_evidence"))
    dialog.note_edit.setPlainText("  thin evidence  ")
    assert dialog.values() == ("insufficient_evidence", "none", "thin evidence")
