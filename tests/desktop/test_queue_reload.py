"""A reload replaces each group's rows in place: the view keeps its place while the analyst types.

Proved by Qt's own notices (no model reset after the first load, rows that stay keep their
persistent indexes), by the model tester checking every insert and remove as it happens, and by
comparing against what a fresh model shows for the same filter; never by timing.
"""

from __future__ import annotations

import qasync
from PySide6.QtCore import QPersistentModelIndex, Qt
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from core.domain import TaskStatus
from core.domain.queue import QueueFilter
from core.tasks.queue import TaskQueue
from core.workspace import Workspace
from desktop.models.queue_model import COL_UPDATED, TASK_ID_ROLE, TaskQueueModel
from desktop.ops import CoreOps
from desktop.presentation import GROUPS
from desktop.views.queue.view import QueueView
from tests.desktop.conftest import add_task, run, wait_signal

S = TaskStatus

# Each word's tasks overlap the next word's, so a keystroke keeps some rows, drops some, adds some.
TEXTS = [
    ("tide moon", S.NEEDS_REVIEW),
    ("tide", S.NEEDS_REVIEW),
    ("moon", S.NEEDS_REVIEW),
    ("tide moon harbour", S.CLOSED),
    ("harbour", S.CLOSED),
    ("moon harbour", S.AWAITING_FEEDBACK),
    ("tide gauge", S.AWAITING_FEEDBACK),
    ("gauge moon", S.FAILED),
    ("tide", S.OPEN),
]


async def _tasks(ws: Workspace) -> dict[str, str]:
    ids: dict[str, str] = {}
    for i, (words, status) in enumerate(TEXTS):
        task = await add_task(ws, f"question {i}: {words}", status)
        ids[f"{i} {words}"] = task.id
    return ids


def _shown(model: TaskQueueModel) -> dict[str, list[str]]:
    return {g.key: model.group_task_ids(g.key) for g in GROUPS}


def _headers(model: TaskQueueModel) -> list[str]:
    return [model.index(gi, 0).data() for gi in range(model.rowCount())]


def test_typing_replaces_rows_without_a_reset(
    qloop: qasync.QEventLoop, workspace: Workspace, qtmodeltester: ModelTester
) -> None:
    ops = CoreOps()
    model = TaskQueueModel(TaskQueue(workspace.store), ops)
    resets: list[None] = []
    model.modelReset.connect(lambda: resets.append(None))

    async def scenario() -> None:
        ids = await _tasks(workspace)
        await model.refresh()
        assert len(resets) == 1  # the first load has nothing on screen to keep
        qtmodeltester.check(model, force_py=True)  # from here on it checks every notice as it comes
        kept = QPersistentModelIndex(model.index_of_task(ids["0 tide moon"]))
        for step, text in enumerate(
            ("ti", "tid", "tide", "tide ", "moon", "harbour", "", "gauge", "zzz", "tide")
        ):
            await model.set_filter(QueueFilter(text=text))
            fresh = TaskQueueModel(TaskQueue(workspace.store), CoreOps())
            await fresh.set_filter(QueueFilter(text=text))
            assert _shown(model) == _shown(fresh), text
            assert _headers(model) == _headers(fresh), text
            if step < 4:  # the task matched every one of these
                assert kept.isValid() and kept.data(TASK_ID_ROLE) == ids["0 tide moon"], text
        # A new order moves rows that stay: still no reset, and the rows come in the new order.
        model.sort(COL_UPDATED, Qt.SortOrder.AscendingOrder)
        await wait_signal(model.sig_refreshed)
        assert model.group_task_ids("needs_review") == [ids["0 tide moon"], ids["1 tide"]]
        assert len(resets) == 1

    run(qloop, scenario())


def test_typing_keeps_the_selected_task_and_the_collapsed_group(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot
) -> None:
    ops = CoreOps()
    model = TaskQueueModel(TaskQueue(workspace.store), ops)
    view = QueueView(model)
    qtbot.addWidget(view)
    view.resize(560, 600)
    view.show()
    announced: list[str | None] = []
    view.sig_task_selected.connect(announced.append)

    async def scenario() -> None:
        ids = await _tasks(workspace)
        await model.refresh()
        view.tree.collapse(model.group_index("closed"))
        chosen = ids["2 moon"]
        assert view.select_task(chosen)
        assert announced == [chosen]
        # "moon" keeps it; rows around it come and go (the others in its group do not match).
        for text in ("m", "mo", "moo", "moon"):
            await model.set_filter(QueueFilter(text=text))
            assert view.selected_task_id == chosen and view.selected_task_ids() == [chosen], text
            assert view.tree.currentIndex().data(TASK_ID_ROLE) == chosen
        assert set(model.group_task_ids("needs_review")) == {ids["2 moon"], ids["0 tide moon"]}
        assert not view.tree.isExpanded(model.group_index("closed")), "a collapsed group stays collapsed"
        assert view.tree.isExpanded(model.group_index("needs_review"))
        assert announced == [chosen], "typing must not announce another selection"
        # A filter that drops it: nothing is selected, said once, and no neighbour is current.
        await model.set_filter(QueueFilter(text="harbour"))
        assert view.selected_task_id is None and view.selected_task_ids() == []
        assert not view.tree.currentIndex().isValid()
        assert announced == [chosen, None]
        # J starts from the top again, as after any reload that lost the selection.
        view.select_next(1)
        first = model.group_task_ids("awaiting_feedback")[0]
        assert view.selected_task_id == first and announced == [chosen, None, first]

    run(qloop, scenario())


def test_no_page_is_fetched_while_a_reload_is_in_flight(
    qloop: qasync.QEventLoop, workspace: Workspace
) -> None:
    """Its rows replace the loaded ones: a page after their last row would be read for nothing."""
    model = TaskQueueModel(TaskQueue(workspace.store), CoreOps(), page_size=1)

    async def scenario() -> None:
        await _tasks(workspace)
        await model.refresh()
        gi = model.group_index("needs_review").row()
        assert model.has_more(gi)
        reload = model.set_filter(QueueFilter(text="tide"))
        assert model.reloading and not model.request_more(gi)
        await reload
        assert not model.reloading and model.request_more(gi)
        await wait_signal(model.sig_page_loaded)
        assert len(model.group_task_ids("needs_review")) == 2

    run(qloop, scenario())
