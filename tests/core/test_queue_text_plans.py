"""A text filter's pages are the same whichever way the store finds them.

``queue_sql`` reads a rare word's matches from the index and sorts them, but walks the queue's
order checking each row when a word is common (``WALK_ABOVE``). Both plans must give exactly the
rows, in exactly the order, that a brute-force Python filter over every task gives; the
threshold is set to force each plan on a few hundred tasks. Runs on both engines.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from functools import cmp_to_key
from typing import Any

import pytest
from sqlalchemy import insert

from core.domain.queue import QUEUE_GROUPS, QueueFilter, QueueSort, SortColumn, precedes
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.store import Store, queue_sql
from core.store.models import TaskRow
from core.tasks.queue import TaskQueue

WORDS = ["moon", "gauge", "harbour", "Ledger", "tide", "zeta", "café", "naïve", "50%_off"]
STATUSES = list(TaskStatus)


def _rows(n: int) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    rows = []
    for i in range(n):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + i // 9) % len(WORDS)]
        rare = " quasar" if i % 97 == 5 else ""
        rows.append(
            {
                "id": uuid.uuid4().hex,
                "title": f"Task {i}: {a} and {b}{rare}",
                "text": f"Question {i} about the {b} {a} records.",
                "status": STATUSES[(i * 5 + i // 3) % len(STATUSES)].value,
                "attempt_count": i % 3,
                "latest_score": None if i % 4 == 0 else round((i % 10) / 10, 1),
                "read_only": False,
                "version": 1,
                "created_at": now - timedelta(seconds=n - i),
                # Ties on purpose: the id decides among equal times, as the queue's order says.
                "updated_at": now - timedelta(seconds=(n - i) // 3),
            }
        )
    return rows


@pytest.fixture
async def filled(db_url: str) -> AsyncIterator[tuple[Store, list[TaskRecord]]]:
    store = await Store.open(db_url)
    async with store.write_engine.begin() as conn:
        await conn.execute(insert(TaskRow), _rows(300))
    try:
        yield store, await store.list_tasks()
    finally:
        await store.close()


def _brute(tasks: list[TaskRecord], needle: str, statuses: set[TaskStatus], sort: QueueSort) -> list[str]:
    """Every task, filtered in Python: the typed text appears in the title or text, any case."""
    wanted = needle.lower()
    found = [
        t for t in tasks if t.status in statuses and (wanted in t.title.lower() or wanted in t.text.lower())
    ]
    found.sort(key=cmp_to_key(lambda a, b: -1 if precedes(a, b, sort) else 1))
    return [t.id for t in found]


# Each needle starts a word, so PostgreSQL's word-prefix index and SQLite's substring index agree.
NEEDLES = [
    "moon",
    "moon and",
    "Task 1",
    "quasar",
    "café",
    "CAFÉ"[:3],
    "naïve",
    "50%_",
    "zeta records",
    "nowhere",
]


@pytest.mark.parametrize("plan", ["read matches", "walk order"])
@pytest.mark.parametrize(
    "sort",
    [QueueSort(), QueueSort(column=SortColumn.LATEST_SCORE, descending=False)],
    ids=["updated", "score"],
)
async def test_text_pages_equal_a_brute_force_filter(
    filled: tuple[Store, list[TaskRecord]], plan: str, sort: QueueSort, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, tasks = filled
    monkeypatch.setattr(queue_sql, "WALK_ABOVE", 10**9 if plan == "read matches" else 0)
    queue = TaskQueue(store)
    for needle in NEEDLES:
        flt = QueueFilter(text=needle)
        snapshot = await queue.snapshot(flt, sort, page_size=7)
        for group in QUEUE_GROUPS:
            expected = _brute(tasks, needle, set(group.statuses), sort)
            first = snapshot.pages[group.key]
            assert [t.id for t in first.rows] == expected[:7], (needle, group.key)
            assert (first.next is not None) == (len(expected) > 7)
            paged = list(first.rows)
            cursor = first.next
            while cursor is not None:
                more = await queue.page(group, flt, sort, after=cursor, limit=7)
                paged.extend(more.rows)
                cursor = more.next
            assert [t.id for t in paged] == expected, (needle, group.key)
