"""A calibration cell's cases as a queue filter: exactly those tasks, counted, on both engines."""

from __future__ import annotations

from core.domain.queue import QueueFilter, QueueSort
from core.domain.status import TaskStatus
from core.store import Store
from core.tasks.queue import TaskQueue


async def test_task_ids_filter_lists_and_counts_exactly_those_tasks(store: Store) -> None:
    ids = [(await store.create_task(f"question {i}")).id for i in range(6)]
    closed = await store.get_task(ids[1])
    await store.update_task(ids[1], expected_version=closed.version, status=TaskStatus.CLOSED)
    queue = TaskQueue(store)
    wanted = (ids[1], ids[4], "not-a-task")
    flt = QueueFilter(task_ids=wanted, cases_label="validator accepted ∧ analyst abandoned")
    assert not flt.is_empty
    snap = await queue.snapshot(flt, QueueSort(), page_size=50)
    listed = {t.id for page in snap.pages.values() for t in page.rows}
    assert listed == {ids[1], ids[4]}
    counts = await queue.counts(flt)
    assert counts[TaskStatus.CLOSED] == 1 and counts[TaskStatus.OPEN] == 1 and sum(counts.values()) == 2
    update = await queue.row(ids[0], flt)
    assert update is not None and update.admitted is False
    none = await queue.snapshot(QueueFilter(task_ids=()), QueueSort(), page_size=50)
    assert not any(page.rows for page in none.pages.values())
    many = QueueFilter(task_ids=(*(f"{i:032x}" for i in range(40_000)), ids[2]))  # past any parameter limit
    assert sum((await queue.counts(many)).values()) == 1
