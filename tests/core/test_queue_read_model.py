"""The queue's read model: one match rule and one order, whether a row comes by page or live.

Random workspaces and random filters and sorts: paging with keyset cursors, counting, asking
about one changed row, and placing a changed row among loaded ones must all describe the same
queue. Runs on every engine the ``db_url`` fixture offers.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text as sql_text

from core.domain.queue import (
    QUEUE_GROUPS,
    OutcomeFilter,
    QueueFilter,
    QueueSort,
    SortColumn,
    precedes,
)
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus, ValidationOutcome
from core.store import Store, queue_sql
from core.tasks.queue import TaskQueue, group_count, place

# Letters chosen to catch escaping (%, _, quote, backslash), ASCII and non-ASCII case, and spaces.
ALPHABET = 'aAbB éÉßẞ%_"\\'

task_specs = st.lists(
    st.fixed_dictionaries(
        {
            "title": st.text(ALPHABET, min_size=1, max_size=6),
            "text": st.text(ALPHABET, min_size=1, max_size=8).filter(
                str.strip
            ),  # the store refuses blank text
            "status": st.sampled_from(list(TaskStatus)),
            "outcome": st.sampled_from([None, *ValidationOutcome]),
            "score": st.sampled_from([None, 0.0, 0.5, 0.5, 1.0]),
            "category": st.sampled_from([None, "incomplete", "hallucination", "B", "a"]),
            "attempts": st.integers(0, 3),
        }
    ),
    max_size=14,
)
filters = st.builds(
    QueueFilter,
    text=st.text(ALPHABET, max_size=4),
    status=st.sampled_from([None, *TaskStatus]),
    outcome=st.sampled_from(list(OutcomeFilter)),
)
sorts = st.builds(QueueSort, column=st.sampled_from(list(SortColumn)), descending=st.booleans())


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def store(loop: asyncio.AbstractEventLoop, db_url: str) -> Iterator[Store]:
    opened = loop.run_until_complete(Store.open(db_url))
    yield opened
    loop.run_until_complete(opened.close())


async def _fill(store: Store, specs: list[dict[str, Any]]) -> None:
    async with store.write_engine.begin() as conn:  # a clean slate per example (cascades to sessions)
        await conn.execute(sql_text("DELETE FROM tasks"))
    for spec in specs:
        task = await store.create_task(spec["text"], title=spec["title"])
        await store.update_task(
            task.id,
            status=spec["status"],
            validation_outcome=spec["outcome"],
            latest_score=spec["score"],
            latest_category=spec["category"],
            attempt_count=spec["attempts"],
        )


async def _all_pages(
    queue: TaskQueue, flt: QueueFilter, sort: QueueSort, size: int
) -> dict[str, list[TaskRecord]]:
    out: dict[str, list[TaskRecord]] = {}
    for group in QUEUE_GROUPS:
        rows: list[TaskRecord] = []
        page = await queue.page(group, flt, sort, after=None, limit=size)
        rows.extend(page.rows)
        while page.next is not None:
            page = await queue.page(group, flt, sort, after=page.next, limit=size)
            rows.extend(page.rows)
        out[group.key] = rows
    return out


def _in_order(rows: list[TaskRecord], sort: QueueSort) -> bool:
    return all(precedes(a, b, sort) for a, b in itertools.pairwise(rows))


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(specs=task_specs, flt=filters, sort=sorts, page_size=st.integers(1, 4))
@pytest.mark.parametrize("walk_above", [queue_sql.WALK_ABOVE, 0], ids=["plan by probe", "always walk"])
def test_pages_counts_live_matches_and_placement_agree(
    loop: asyncio.AbstractEventLoop,
    store: Store,
    specs: list[dict[str, Any]],
    flt: QueueFilter,
    sort: QueueSort,
    page_size: int,
    walk_above: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(queue_sql, "WALK_ABOVE", walk_above)  # a common word's plan, on tiny workspaces
    queue = TaskQueue(store)

    async def scenario() -> None:
        await _fill(store, specs)
        paged = await _all_pages(queue, flt, sort, page_size)
        whole = await _all_pages(queue, flt, sort, 1000)
        counts = await queue.counts(flt)
        snapshot = await queue.snapshot(flt, sort, page_size=page_size)
        for group in QUEUE_GROUPS:
            rows = whole[group.key]
            # Keyset paging loses and repeats nothing, and pages come in the documented order.
            assert [t.id for t in paged[group.key]] == [t.id for t in rows]
            assert _in_order(rows, sort)
            assert group_count(group, flt, counts) == len(rows)
            assert [t.id for t in snapshot.pages[group.key].rows] == [t.id for t in rows[:page_size]]
            # Placing any row among the others (as a live update does) finds its paged position.
            for i, task in enumerate(rows):
                others = rows[:i] + rows[i + 1 :]
                assert place(others, task, sort, complete=True) == i
                if i == len(rows) - 1:
                    assert place(others, task, sort, complete=False) is None
        # The live-update question answers exactly as the pages do, for every task.
        listed = {t.id for rows in whole.values() for t in rows}
        for task in await store.list_tasks():
            update = await queue.row(task.id, flt)
            assert update is not None
            assert update.admitted == (task.id in listed), (task, flt)

    loop.run_until_complete(scenario())


@pytest.mark.parametrize("column", list(SortColumn))
async def test_nulls_sort_lowest_and_ties_go_by_id(db_url: str, column: SortColumn) -> None:
    store = await Store.open(db_url)
    try:
        ids = []
        for i, score in enumerate([None, 0.5, None, 0.5, 1.0]):
            task = await store.create_task(f"task {i}", title="same" if i % 2 else "Same")
            await store.update_task(task.id, latest_score=score, status=TaskStatus.NEEDS_REVIEW)
            ids.append(task.id)
        queue = TaskQueue(store)
        group = QUEUE_GROUPS[0]
        for descending in (False, True):
            sort = QueueSort(column=column, descending=descending)
            page = await queue.page(group, QueueFilter(), sort, after=None, limit=10)
            assert _in_order(list(page.rows), sort)
            assert sorted(t.id for t in page.rows) == sorted(ids)
    finally:
        await store.close()


async def test_a_vanished_task_is_no_row(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        assert await TaskQueue(store).row("0" * 32, QueueFilter()) is None
    finally:
        await store.close()
