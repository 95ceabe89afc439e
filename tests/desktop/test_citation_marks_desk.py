"""Citation feedback on the desk: + and − mark the current citation right or wrong, one key per
row, each mark an event; the latest mark on a citation stands; the ? sheet names the keys."""

from __future__ import annotations

import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from core.calibration import calibrate
from core.domain import TaskStatus
from core.domain.facts import EventKind
from core.workspace import Workspace
from desktop.dialogs.shortcuts import shortcut_rows
from desktop.views.task.validator import MARK_COLUMN
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, run, select, started


async def _seed(ws: Workspace, status: TaskStatus) -> str:
    task = await add_task(ws, f"Which tide? ({status.value})", status)
    store = ws.store
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="Which tide?")
    await store.update_attempt(attempt.id, final_output="The spring tide.", state="finished")
    cited = [
        {"claim": f"claim {i}", "evidence_id": f"E{i}", "quote": f"quote {i}", "verdict": "supported"}
        for i in range(1, 4)
    ]
    await store.add_validation(
        task_id=task.id, attempt_id=attempt.id, attempt_index=1,
        result={"status": "accepted", "score": 0.9, "category": "none", "citations": cited},
        raw_response="{}", prompt=None,
        debug={"validator_model": "scripted/validator", "validator_version": "vdesk1", "warnings": []},
    )  # fmt: skip
    return task.id


def test_plus_and_minus_mark_each_citation_and_the_latest_mark_stands(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task_id = await _seed(workspace, TaskStatus.AWAITING_FEEDBACK)
        running = await _seed(workspace, TaskStatus.RUNNING)
        await started(desk)
        await select(desk, task_id)
        listing = desk.detail.validator_view.citations
        assert listing.headerItem().text(MARK_COLUMN) == "Your mark"

        async def press(key: Qt.Key) -> None:
            desk.queue.tree.setFocus()  # window-level keys: they work from the queue too
            QTest.keyClick(desk.queue.tree, key)
            await desk.services.ops.wait_idle()

        for key in (Qt.Key.Key_Plus, Qt.Key.Key_Minus, Qt.Key.Key_Plus):  # rows 1, 2, 3 in turn
            await press(key)
        marks = [listing.topLevelItem(r).text(MARK_COLUMN) for r in range(3)]
        assert [m.split()[1] for m in marks] == ["right", "wrong", "right"]

        listing.setCurrentItem(listing.topLevelItem(1))
        await press(Qt.Key.Key_Plus)  # the second citation was right after all: this mark stands
        assert listing.topLevelItem(1).text(MARK_COLUMN).split()[1] == "right"
        events = await workspace.store.get_task_events(task_id, kinds=[EventKind.CITATION_MARKED])
        assert [(e.payload["citation"], e.payload["mark"]) for e in events] == [
            (0, "right"), (1, "wrong"), (2, "right"), (1, "right"),
        ]  # fmt: skip
        cal = await calibrate(workspace.store)
        assert cal.citations is not None
        assert [(v.validator_version, v.right, v.wrong) for v in cal.citations.by_validator] == [
            ("vdesk1", 3, 0)
        ]

        # Reselecting the task reads the marks back from its events.
        await select(desk, running)
        await select(desk, task_id)
        assert [listing.topLevelItem(r).text(MARK_COLUMN).split()[1] for r in range(3)] == ["right"] * 3

        # A task still running has no settled verdict: nothing is written, and the desk says why.
        await select(desk, running)
        await press(Qt.Key.Key_Minus)
        assert not await workspace.store.get_task_events(running, kinds=[EventKind.CITATION_MARKED])

        sheet = {what.split(":")[0]: keys for keys, what in shortcut_rows(desk.actions())}
        assert "+" in sheet["Mark citation right"] and "-" in sheet["Mark citation wrong"]

    run(qloop, scenario())
