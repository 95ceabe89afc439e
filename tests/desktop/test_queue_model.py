from __future__ import annotations

import qasync
from PySide6.QtCore import QModelIndex
from pytestqt.modeltest import ModelTester

from core.domain import TaskStatus, ValidationOutcome
from core.domain.queue import QueueFilter
from core.tasks.queue import TaskQueue
from core.workspace import Workspace
from desktop.models.queue_model import TASK_ID_ROLE, TaskQueueModel
from desktop.ops import CoreOps
from desktop.presentation import GROUPS
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
            workspace, "a tide question", S.CLOSED, validation_outcome=ValidationOutcome.FORCE_ACCEPTED
        )
        model = TaskQueueModel(TaskQueue(workspace.store), ops, page_size=3)
        await model.refresh()
        closed = model.group_index("closed")
        assert model.rowCount(closed) == 3 and model.canFetchMore(closed)
        model.fetchMore(closed)
        assert not model.canFetchMore(closed), "a page load in flight must not be requested twice"
        await wait_signal(model.sig_page_loaded)
        assert model.rowCount(closed) == 6
        model.fetchMore(closed)
        await wait_signal(model.sig_page_loaded)
        assert model.rowCount(closed) == 8 and not model.canFetchMore(closed)
        ids = [model.index(r, 0, closed).data(TASK_ID_ROLE) for r in range(8)]
        assert len(set(ids)) == 8
        await model.set_filter(QueueFilter(text="TIDE"))
        assert model.group_count("closed") == 1
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
