"""Claims on the desk: the selected task is claimed, others' claims are marked, S asks first."""

from __future__ import annotations

import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from core.domain import TaskStatus
from core.domain.facts import EventKind
from core.tasks.claims import Claims
from core.workspace import Workspace
from desktop.models.queue_model import COL_STATUS
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, run, select, started, wait_until

S = TaskStatus


def test_a_task_claimed_by_another_reviewer_is_marked_and_s_asks_to_take_it_over(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    questions: list[str] = []

    async def scenario() -> None:
        task = await add_task(workspace, "held by a colleague", S.NEEDS_REVIEW)
        free = await add_task(workspace, "nobody has this one", S.NEEDS_REVIEW)
        await Claims(workspace.store).claim(task.id, "colleague")
        await started(desk)
        at = desk.model.index_of_task(task.id)
        status = at.siblingAtColumn(COL_STATUS).data()
        tip = at.data(Qt.ItemDataRole.ToolTipRole)
        assert "claimed by colleague until" in status and tip.startswith("claimed by colleague until")
        assert "claimed" not in desk.model.index_of_task(free.id).siblingAtColumn(COL_STATUS).data()

        await select(desk, task.id)
        await wait_until(lambda: task.id in desk.claims._others, what="the claim to be refused")
        desk.claims.ask = lambda q: bool(questions.append(q))  # the analyst answers No
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S)
        assert questions and "claimed by colleague" in questions[0]
        assert (await workspace.store.get_task(task.id)).status is S.NEEDS_REVIEW

        desk.claims.ask = lambda q: True  # now Yes: taken over, then closed
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S)
        await wait_until(lambda: desk.model.group_count("closed") == 1, what="the task to close")
        await desk.ops.wait_idle()
        kinds = [e.kind for e in await workspace.store.get_task_events(task.id)]
        assert EventKind.CLAIM_TAKEN_OVER in kinds
        # Ours now, or already let go if the desk advanced to the next task after deciding.
        holder = await Claims(workspace.store).holder(task.id)
        assert holder is None or holder.reviewer == desk.claims.reviewer

    run(qloop, scenario())


def test_selecting_claims_and_moving_away_releases(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        first = await add_task(workspace, "first to review", S.NEEDS_REVIEW)
        second = await add_task(workspace, "second to review", S.NEEDS_REVIEW)
        claims = Claims(workspace.store)
        await started(desk)
        await select(desk, first.id)
        await wait_until(lambda: desk.claims.held == first.id, what="the first claim")
        assert (await claims.holder(first.id)).reviewer == desk.claims.reviewer  # type: ignore[union-attr]
        # Our own claim is not marked as someone else's.
        assert "claimed" not in desk.model.index_of_task(first.id).siblingAtColumn(COL_STATUS).data()
        await select(desk, second.id)
        await wait_until(lambda: desk.claims.held == second.id, what="the second claim")
        await desk.ops.wait_idle()
        assert await claims.holder(first.id) is None
        assert await workspace.store.get_task_events(first.id) == []  # moving on is not an event

    run(qloop, scenario())
