"""The desk side of a team workspace: batches and schedules panes, "Assigned to me", presence,
and claims and presence from another desk shown live.

The panes' rows come from core; these tests check what the analyst sees and does: a batch's
progress bar and the queue narrowed to it, a cron schedule's next run for a fixed now, only my
claimed tasks under "Assigned to me", and, with two windows on two engines (PostgreSQL and
SQLite), desk A's claim and presence in desk B within the issue's 2 s.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import qasync
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from core.config import Settings
from core.domain import TaskStatus
from core.store.batches import BatchItem, BatchRepository
from core.store.schedules import ScheduleRepository
from core.tasks.claims import Claims
from core.workspace import Workspace
from desktop.models.queue_model import COL_STATUS
from desktop.presentation import GROUPS
from desktop.services import DeskServices
from desktop.views.team.batches import COL_PROGRESS, PROGRESS_ROLE
from desktop.views.team.schedules import COL_NEXT, COL_VERDICT
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, quiet_desk, run, select, started, wait_signal, wait_until

S = TaskStatus
APPEAR_S = 2.0  # the bound for another desk's change


def listed_ids(window: MainWindow) -> set[str]:
    return {i for look in GROUPS for i in window.model.group_task_ids(look.key)}


def test_batches_pane_shows_progress_and_activating_a_batch_filters_the_queue(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, qtmodeltester: ModelTester
) -> None:
    pane = desk.team.batches

    async def scenario() -> None:
        items = [BatchItem(key=str(n), text=f"flagged answer {n}") for n in range(4)]
        result = await BatchRepository(workspace.store).queue("f" * 64, "flagged.jsonl", items)
        await workspace.store.update_task(result.task_ids[0], status=S.CLOSED)
        outsider = await add_task(workspace, "not from the batch", S.NEEDS_REVIEW)
        await started(desk)
        await wait_until(lambda: len(pane.rows) == 1, what="the batch in the pane")
        assert pane.isVisible()  # a workspace with batches shows the pane
        at = pane.model.index(0, COL_PROGRESS)
        assert at.data(PROGRESS_ROLE) == (1, 4) and at.data() == "1/4 decided"
        assert pane.model.index(0, 0).data() == "flagged.jsonl"
        assert not pane.table.grab().isNull()  # the progress bar paints
        qtmodeltester.check(pane.model)

        # Live: a task of the batch is decided elsewhere; the pane's progress follows.
        await workspace.store.update_task(result.task_ids[1], status=S.ABANDONED)
        desk.model.update_task(result.task_ids[1])  # what the bus notice does for other writers
        pane.reload_soon()
        await wait_until(lambda: pane.rows[0].decided == 2, what="the progress to move")

        refreshed = wait_signal(desk.model.sig_refreshed)
        pane.table.activated.emit(pane.model.index(0, 0))
        await refreshed
        assert listed_ids(desk) == set(result.task_ids)
        assert outsider.id not in listed_ids(desk)
        assert pane.chip.isVisible() and pane.chip.text().startswith("Batch: flagged.jsonl")

        # Typing in the filter narrows within the batch; it does not drop it.
        desk.queue.filter_edit.setText("answer 3")
        refreshed = wait_signal(desk.model.sig_refreshed)
        desk.queue.apply_filter()
        await refreshed
        assert desk.model.filter.batch_id == "f" * 64
        desk.queue.filter_edit.clear()
        refreshed = wait_signal(desk.model.sig_refreshed)
        desk.queue.apply_filter()
        await refreshed

        refreshed = wait_signal(desk.model.sig_refreshed)
        QTest.mouseClick(pane.chip, Qt.MouseButton.LeftButton)  # the chip's ✕ clears the batch filter
        await refreshed
        assert outsider.id in listed_ids(desk) and not pane.chip.isVisible()

    run(qloop, scenario())


def test_schedules_pane_shows_the_next_run_of_a_cron_schedule_for_a_fixed_now(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    pane = desk.team.schedules
    now = datetime(2030, 1, 1, 8, 0, tzinfo=UTC)
    pane.clock = lambda: now

    async def scenario() -> None:
        task = await add_task(workspace, "check the feeds", title="Heartbeat: feeds")
        repo = ScheduleRepository(workspace.store)
        sc = await repo.add(
            task.id,
            cron="0 9 * * *",
            interval_s=None,
            checklist=None,
            verify_heartbeat=True,
            next_run_at=now - timedelta(days=1),  # overdue: nothing has fired it since
        )
        await repo.record_verdict(sc.id, "not_achieved: goal_missed")
        await started(desk)
        await wait_until(lambda: len(pane.rows) == 1, what="the schedule in the pane")
        nine = datetime(2030, 1, 1, 9, 0, tzinfo=UTC).astimezone().strftime("%Y-%m-%d %H:%M")
        assert pane.model.index(0, COL_NEXT).data() == f"due now, then {nine}"
        assert pane.model.index(0, COL_VERDICT).data() == "not_achieved: goal_missed"
        assert [pane.model.index(0, c).data() for c in (0, 1, 5)] == [
            "Heartbeat: feeds",
            "cron 0 9 * * *",
            "enabled · verify",
        ]

        await select(desk, task.id)  # activating a schedule selects its task (already selected here)
        pane.table.activated.emit(pane.model.index(0, 0))
        assert desk.queue.selected_task_id == task.id

    run(qloop, scenario())


def test_assigned_to_me_lists_only_my_claimed_tasks_and_each_reviewer_has_a_queue(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    pane = desk.team.assigned
    me = desk.claims.reviewer

    async def scenario() -> None:
        mine = await add_task(workspace, "mine to review", S.NEEDS_REVIEW)
        theirs = await add_task(workspace, "a colleague's", S.NEEDS_REVIEW)
        await add_task(workspace, "nobody's", S.NEEDS_REVIEW)
        await Claims(workspace.store).claim(mine.id, me)
        await Claims(workspace.store).claim(theirs.id, "colleague")
        await started(desk)
        pane.show()

        def titles() -> set[str]:
            return {r.task.title for r in pane.rows}

        await wait_until(lambda: titles() == {mine.title}, what="only my task under Assigned to me")
        assert pane.combo.currentText() == f"Assigned to me ({me})"
        await wait_until(lambda: pane.combo.findData("colleague") >= 0, what="the colleague's queue")
        pane.show_reviewer("colleague")
        await wait_until(lambda: titles() == {theirs.title}, what="the colleague's queue")
        pane.show_reviewer(None)
        await wait_until(lambda: titles() == {mine.title, theirs.title}, what="everyone's claims")

        pane.table.activated.emit(pane.model.index(0, 0))
        assert desk.queue.selected_task_id == pane.rows[0].task.id

    run(qloop, scenario())


def test_a_claim_and_presence_in_one_desk_appear_in_the_other_within_2s(
    qloop: qasync.QEventLoop, qtbot: QtBot, tmp_path: Path, db_url: str, desk_settings: Settings
) -> None:
    """On PostgreSQL through NOTIFY from the claims and presence tables; on SQLite through the
    data-version watch. Two windows on two engines, as two analysts' desks."""
    spaces = [
        run(qloop, Workspace.open(desk_settings.model_copy(update={"db_url": db_url, "reviewer": name})))
        for name in ("alice", "bob")
    ]
    windows: list[MainWindow] = []
    for n, ws in enumerate(spaces):
        ui = QSettings(str(tmp_path / f"desk-{n}.ini"), QSettings.Format.IniFormat)
        window = MainWindow(DeskServices.for_workspace(ws), ui_state=ui)
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
    alice, bob = windows

    async def go_live(window: MainWindow) -> None:
        await started(window)
        await wait_until(lambda: window.live.watching, what="the watcher to start")

    async def scenario() -> None:
        task = await add_task(spaces[0], "both look at this REVIEWME", S.NEEDS_REVIEW)
        other = await add_task(spaces[0], "the next one", S.NEEDS_REVIEW)
        await go_live(alice)
        await go_live(bob)
        await select(bob, other.id)
        await select(alice, task.id)  # claims it and records alice's presence

        def note() -> str:
            return bob.model.claim_note(task.id) or ""

        await wait_until(
            lambda: "claimed by alice" in note() and "👁 alice" in note(),
            timeout=APPEAR_S,
            what="alice's claim and presence in bob's queue",
        )
        assert "claimed by alice" in str(bob.model.index_of_task(task.id).siblingAtColumn(COL_STATUS).data())

        await select(bob, task.id)  # bob looks too: each sees the other in the detail header
        await wait_until(
            lambda: bob.team.presence.label.text().startswith("👁 alice"),
            timeout=APPEAR_S,
            what="alice in bob's detail header",
        )
        await wait_until(
            lambda: alice.team.presence.label.text().startswith("👁 bob"),
            timeout=APPEAR_S,
            what="bob in alice's detail header",
        )

        await select(alice, other.id)  # alice moves on: her claim and presence on the task go
        await wait_until(
            lambda: "alice" not in note(), timeout=APPEAR_S, what="alice's release in bob's queue"
        )

    try:
        run(qloop, scenario())
    finally:
        for window in windows:
            run(qloop, quiet_desk(window))
        for ws in spaces:
            run(qloop, ws.close())
