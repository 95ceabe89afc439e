"""The queue under load: bursts of notices and keystrokes cost one reload, counts never recount.

Proved by counters (reloads actually run, failures reported), never by timing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import qasync
from sqlalchemy import insert, update

from core.domain import TaskStatus
from core.domain.queue import QueueFilter
from core.store.models import TaskRow
from core.tasks.queue import TaskQueue
from core.workspace import Workspace
from desktop.models.queue_model import TaskQueueModel
from desktop.ops import CoreOps
from tests.desktop.conftest import run, wait_until

S = TaskStatus


async def _bulk(ws: Workspace, n: int, status: TaskStatus, title: str) -> list[str]:
    now = datetime.now(UTC)
    rows = [
        {"id": uuid.uuid4().hex, "title": f"{title} {i}", "text": f"{title} {i}", "status": status.value,
         "attempt_count": 0, "read_only": False, "version": 1,
         "created_at": now - timedelta(seconds=i), "updated_at": now - timedelta(seconds=i)}
        for i in range(n)
    ]  # fmt: skip
    async with ws.store.write_engine.begin() as conn:
        await conn.execute(insert(TaskRow), rows)
    return [r["id"] for r in rows]


def _model(ws: Workspace, failures: list[str], page_size: int = 50) -> TaskQueueModel:
    ops = CoreOps()
    ops.sig_failed.connect(lambda what, msg: failures.append(f"{what}: {msg}"))
    return TaskQueueModel(TaskQueue(ws.store), ops, page_size=page_size)


def test_three_thousand_notices_make_one_refresh(qloop: qasync.QEventLoop, workspace: Workspace) -> None:
    failures: list[str] = []
    model = _model(workspace, failures)

    async def scenario() -> None:
        ids = await _bulk(workspace, 3000, S.RUNNING, "recovered")
        await model.refresh()
        assert model.refreshes_started == 1
        async with workspace.store.write_engine.begin() as conn:  # what crash recovery writes
            await conn.execute(update(TaskRow).values(status=S.FAILED.value, version=TaskRow.version + 1))
        last = None
        for task_id in ids:  # one TaskChanged notice per recovered task, all at once
            last = model.update_task(task_id)
        assert last is not None
        await last
        await wait_until(lambda: model.group_count("failed") == 3000, what="the recovered tasks to show")

    run(qloop, scenario())
    assert model.refreshes_started == 2  # the first load and one reload for the whole burst
    assert model.group_count("active") == 0
    assert failures == []  # no pool errors (nor any other) reached the analyst


def test_a_burst_of_refreshes_runs_one(qloop: qasync.QEventLoop, workspace: Workspace) -> None:
    failures: list[str] = []
    model = _model(workspace, failures)

    async def scenario() -> None:
        await _bulk(workspace, 200, S.CLOSED, "harbour tide")
        last = None
        for _ in range(3000):
            last = model.refresh()
        assert last is not None
        await last
        typed = ""
        for ch in "harbour":  # keystrokes arriving faster than the store answers
            typed += ch
            last = model.set_filter(QueueFilter(text=typed))
        await last

    run(qloop, scenario())
    assert model.refreshes_started == 2  # every older reload was cancelled before it asked
    assert model.filter.text == "harbour"
    assert failures == []


def test_text_filter_counts_arrive_in_the_background(qloop: qasync.QEventLoop, workspace: Workspace) -> None:
    failures: list[str] = []
    model = _model(workspace, failures, page_size=10)
    headers: list[str] = []
    model.sig_refreshed.connect(lambda: headers.append(model.group_index("closed").data()))

    async def scenario() -> None:
        await _bulk(workspace, 40, S.CLOSED, "harbour tide")
        await _bulk(workspace, 5, S.CLOSED, "moon")
        await model.set_filter(QueueFilter(text="harbour"))
        assert headers == ["Closed  (≥ 10)"]  # the first page, before the count is known
        await wait_until(lambda: model.group_index("closed").data() == "Closed  (40)", what="the count")
        # A live move of a loaded row under a text filter moves the counts, nothing is recounted.
        moving = model.group_task_ids("closed")[0]
        async with workspace.store.write_engine.begin() as conn:
            await conn.execute(update(TaskRow).where(TaskRow.id == moving).values(status=S.FAILED.value))
        counting = model.refreshes_started
        await model.update_task(moving)
        assert model.group_count("closed") == 39 and model.group_count("failed") == 1
        assert model.refreshes_started == counting

    run(qloop, scenario())
    assert failures == []
