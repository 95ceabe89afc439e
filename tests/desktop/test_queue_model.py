from __future__ import annotations

import asyncio

import qasync
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QColor
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from core.domain import TaskStatus, ValidationOutcome
from core.domain.queue import QueueFilter
from core.tasks.queue import TaskQueue
from core.workspace import Workspace
from desktop.models.queue_model import COL_OUTCOME, TASK_ID_ROLE, TaskQueueModel
from desktop.ops import CoreOps
from desktop.presentation import GROUPS, NOT_ENDORSED_COLOUR
from desktop.views.queue.view import QueueView
from tests.desktop.conftest import add_task, run, wait_signal

S = TaskStatus


def group_rows(model: TaskQueueModel) -> list[str]:
    return [model.index(i, 0).data() for i in range(model.rowCount())]


def test_groups_in_order_with_counts(
    qloop: qasync.QEventLoop, workspace: Workspace, qtmodeltester: ModelTester
) -> None:
    async def scenario() -> TaskQueueModel:
        for status, n in [(S.NEEDS_REVIEW, 2), (S.RUNNING, 1), (S.VALIDATING, 1), (S.CLOSED, 3), (S.OPEN, 1)]:
            for i in range(n):
                await add_task(workspace, f"{status.value} task {i}", status)
        model = TaskQueueModel(TaskQueue(workspace.store), CoreOps())
        await model.refresh()
        return model

    model = run(qloop, scenario())
    assert group_rows(model) == [
        "Needs review  (2)",
        "Awaiting feedback  (0)",
        "Needs revision  (0)",
        "Running and validating  (2)",
        "Open  (1)",
        "Failed  (0)",
        "Closed  (3)",
        "Abandoned  (0)",
    ]
    assert [g.title for g in GROUPS] == [r.split("  (")[0] for r in group_rows(model)]
    qtmodeltester.check(model, force_py=True)


def test_needs_review_never_among_running(qloop: qasync.QEventLoop, workspace: Workspace) -> None:
    async def scenario() -> tuple[TaskQueueModel, str]:
        review = await add_task(workspace, "delivered, unendorsed", S.NEEDS_REVIEW)
        await add_task(workspace, "still working", S.RUNNING)
        model = TaskQueueModel(TaskQueue(workspace.store), CoreOps())
        await model.refresh()
        # A live move from running to needs_review must land in its own section.
        moving = await add_task(workspace, "about to finish", S.VALIDATING)
        await model.update_task(moving.id)
        await workspace.store.update_task(moving.id, status=S.NEEDS_REVIEW)
        await model.update_task(moving.id)
        return model, review.id

    model, review_id = run(qloop, scenario())
    active = model.group_task_ids("active")
    needs_review = model.group_task_ids("needs_review")
    assert review_id in needs_review and review_id not in active
    assert len(needs_review) == 2 and len(active) == 1
    assert model.group_count("needs_review") == 2 and model.group_count("active") == 1


def test_lazy_pages_and_filters(
    qloop: qasync.QEventLoop, workspace: Workspace, qtmodeltester: ModelTester
) -> None:
    ops = CoreOps()

    async def scenario() -> TaskQueueModel:
        for i in range(7):
            await add_task(
                workspace, f"closed number {i}", S.CLOSED, validation_outcome=ValidationOutcome.ACCEPTED
            )
        await add_task(
            workspace,
            "a tide question",
            S.CLOSED,
            validation_outcome=ValidationOutcome.FORCE_ACCEPTED,
            latest_validation_status="rejected",
        )
        model = TaskQueueModel(TaskQueue(workspace.store), ops, page_size=3)
        await model.refresh()
        closed = model.group_index("closed")
        gi = closed.row()
        # Qt may ask at any layout; the model only pages when the view asked for rows.
        assert model.rowCount(closed) == 3 and model.has_more(gi) and not model.canFetchMore(closed)
        assert model.request_more(gi)
        assert not model.request_more(gi), "a page load in flight must not be requested twice"
        await wait_signal(model.sig_page_loaded)
        assert model.rowCount(closed) == 6
        assert model.request_more(gi)
        await wait_signal(model.sig_page_loaded)
        assert model.rowCount(closed) == 8 and not model.has_more(gi) and not model.request_more(gi)
        ids = [model.index(r, 0, closed).data(TASK_ID_ROLE) for r in range(8)]
        assert len(set(ids)) == 8
        await model.set_filter(QueueFilter(text="TIDE"))
        assert model.group_count("closed") == 1
        # Rejected on every attempt: the column says so, never "force-accepted" (read as accepted).
        closed = model.group_index("closed")
        cell = model.index(0, COL_OUTCOME, closed)  # short enough for the column, never elided
        assert (
            cell.data() == "rejected" and cell.data(Qt.ItemDataRole.ToolTipRole) == "not endorsed: rejected"
        )
        assert cell.data(Qt.ItemDataRole.ForegroundRole) == QColor(NOT_ENDORSED_COLOUR)
        await model.set_filter(QueueFilter(outcome="accepted"))
        assert model.group_count("closed") == 7
        await model.set_filter(QueueFilter(status=S.OPEN))
        assert model.total_count == 0
        return model

    model = run(qloop, scenario())
    qtmodeltester.check(model, force_py=True)


def test_live_update_moves_row_and_keeps_persistent_index(
    qloop: qasync.QEventLoop, workspace: Workspace
) -> None:
    from PySide6.QtCore import QPersistentModelIndex

    async def scenario() -> None:
        task = await add_task(workspace, "watch me move", S.RUNNING)
        await add_task(workspace, "a neighbour", S.RUNNING)
        model = TaskQueueModel(TaskQueue(workspace.store), CoreOps())
        await model.refresh()
        held = QPersistentModelIndex(model.index_of_task(task.id))
        assert held.parent().row() == 3
        await workspace.store.update_task(task.id, status=S.AWAITING_FEEDBACK)
        await model.update_task(task.id)
        assert held.isValid() and held.data(TASK_ID_ROLE) == task.id
        assert held.parent() == model.group_index("awaiting_feedback")
        assert model.group_count("active") == 1 and model.group_count("awaiting_feedback") == 1
        assert model.parent(QModelIndex()) == QModelIndex()

    run(qloop, scenario())


async def _bulk_tasks(ws: Workspace, n: int, status: TaskStatus) -> None:
    """Thousands of stored tasks in one statement (set-up only: the desk never writes rows)."""
    import uuid
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import insert

    from core.store.models import TaskRow

    now = datetime.now(UTC)
    rows = [
        {
            "id": uuid.uuid4().hex,
            "title": f"bulk task {i}",
            "text": f"bulk task {i}",
            "status": status.value,
            "attempt_count": 0,
            "read_only": False,
            "version": 1,
            "created_at": now - timedelta(seconds=i),
            "updated_at": now - timedelta(seconds=i),
        }
        for i in range(n)
    ]
    async with ws.store.write_engine.begin() as conn:
        await conn.execute(insert(TaskRow), rows)


async def _settle(ops: CoreOps, view: QueueView, rounds: int = 50) -> None:
    """Let the view and model do whatever they do unprompted until nothing has happened for a while.

    Quiescence is counted in loop rounds with nothing in flight, not measured in seconds; each
    round really yields to Qt (a zero sleep would spin ahead of Qt's timers and socket events).
    A queue that keeps paging by itself never settles, and fails here instead of hanging.
    """
    quiet = total = 0
    while quiet < rounds:
        await asyncio.sleep(0.01)
        total += 1
        assert total < 3000, "the queue kept loading pages with no input"
        quiet = 0 if (ops.pending or view.rows_check_pending) else quiet + 1


def test_an_idle_queue_loads_only_what_it_shows(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot
) -> None:
    """50,000 tasks: the view must not page through them by itself (it once loaded 20k in 15 s)."""
    ops = CoreOps()
    model = TaskQueueModel(TaskQueue(workspace.store), ops, page_size=100)
    view = QueueView(model)
    qtbot.addWidget(view)
    view.resize(560, 800)
    view.show()

    async def scenario() -> tuple[int, int, int]:
        await _bulk_tasks(workspace, 50_000, S.NEEDS_REVIEW)
        await model.refresh()
        await _settle(ops, view)
        idle = model.rowCount(model.group_index("needs_review"))
        await _settle(ops, view)
        still = model.rowCount(model.group_index("needs_review"))
        view.tree.scrollToBottom()  # the analyst scrolls to the end of what is loaded
        await _settle(ops, view)
        return idle, still, model.rowCount(model.group_index("needs_review"))

    idle, still, scrolled = run(qloop, scenario())
    assert idle == still <= 300  # the pages one screen needs, and no more while nobody scrolls
    assert still < scrolled <= still + 300  # scrolling to the end brings a page or two, not everything
    assert model.group_count("needs_review") == 50_000
