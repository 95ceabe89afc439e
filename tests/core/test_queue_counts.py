"""``task_counts`` stays equal to a fresh COUNT whatever writes the tasks, on both engines.

The desk's group headers read ``task_counts`` instead of counting; the triggers that keep it
must hold through creation, status and outcome moves, deletes and bulk imports, in any order.
A reload under a text filter asks the index once, for every group's first page.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, event, insert
from sqlalchemy import text as sql_text

from core.domain.queue import OutcomeFilter, QueueFilter, QueueSort
from core.domain.status import TaskStatus, ValidationOutcome
from core.store import Store, queue_sql
from core.store.models import TaskRow, utcnow
from core.tasks.queue import TaskQueue

steps = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.integers(0, 1000)),
        st.tuples(st.just("move"), st.integers(0, 1000), st.sampled_from(list(TaskStatus))),
        st.tuples(st.just("outcome"), st.integers(0, 1000), st.sampled_from([None, *ValidationOutcome])),
        st.tuples(st.just("delete"), st.integers(0, 1000)),
        st.tuples(st.just("bulk"), st.integers(1, 30), st.sampled_from(list(TaskStatus))),
    ),
    max_size=25,
)
filters = st.builds(
    QueueFilter, status=st.sampled_from([None, *TaskStatus]), outcome=st.sampled_from(list(OutcomeFilter))
)


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


async def _apply(store: Store, ids: list[str], step: tuple[Any, ...]) -> None:
    kind = step[0]
    if kind == "create":
        ids.append((await store.create_task(f"task {step[1]}")).id)
    elif kind == "bulk":  # an import that bypasses the repository, as the benchmark's does
        now = utcnow()
        rows = [
            {"id": uuid.uuid4().hex, "title": "t", "text": "t", "status": step[2].value, "version": 1,
             "attempt_count": 0, "read_only": False, "created_at": now, "updated_at": now}
            for _ in range(step[1])
        ]  # fmt: skip
        async with store.write_engine.begin() as conn:
            await conn.execute(insert(TaskRow), rows)
        ids.extend(r["id"] for r in rows)
    elif ids:
        task_id = ids[step[1] % len(ids)]
        if kind == "move":
            await store.update_task(task_id, status=step[2])
        elif kind == "outcome":
            await store.update_task(task_id, validation_outcome=step[2])
        else:
            async with store.write_engine.begin() as conn:
                await conn.execute(delete(TaskRow).where(TaskRow.id == task_id))
            ids.remove(task_id)


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps, flt=filters)
def test_maintained_counts_equal_a_fresh_count(
    loop: asyncio.AbstractEventLoop, store: Store, steps: list[tuple[Any, ...]], flt: QueueFilter
) -> None:
    async def scenario() -> None:
        async with store.write_engine.begin() as conn:  # a clean slate per example
            await conn.execute(sql_text("DELETE FROM tasks"))
        ids: list[str] = []
        for step in steps:
            await _apply(store, ids, step)
            if ids:
                await store.touch_heartbeat(ids[0])  # an update that moves nothing counts nothing
        assert await queue_sql.stored_counts(store, flt) == await queue_sql.recount_by_status(store, flt)
        assert await queue_sql.stored_counts(store, QueueFilter()) == await queue_sql.recount_by_status(
            store, QueueFilter()
        )

    loop.run_until_complete(scenario())


async def test_a_text_filter_reload_asks_the_index_once(db_url: str) -> None:
    store = await Store.open(db_url)
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        # The claims lookup (a primary-key IN over the page's ids, for "claimed by" marks) is
        # not the index nor the counts this test is about.
        if statement.lstrip().upper().startswith(("SELECT", "WITH")) and "FROM claims" not in statement:
            statements.append(statement)

    try:
        for i, status in enumerate(TaskStatus):
            task = await store.create_task(f"harbour tide {i}")
            await store.update_task(task.id, status=status)
        event.listen(store.engine.sync_engine, "before_cursor_execute", seen)
        snapshot = await TaskQueue(store).snapshot(QueueFilter(text="harbour ti"), QueueSort(), page_size=5)
        event.remove(store.engine.sync_engine, "before_cursor_execute", seen)
        # SQLite first asks the index for a bounded number of matches (which plan pages take).
        assert len(statements) == (2 if store.is_sqlite else 1), statements
        assert all(s.count("tasks_fts MATCH") <= 1 for s in statements)  # the index once per statement
        assert snapshot.counts is None  # counting every match is left to the background
        assert sum(len(p.rows) for p in snapshot.pages.values()) == len(TaskStatus)
        statements.clear()
        event.listen(store.engine.sync_engine, "before_cursor_execute", seen)
        plain = await TaskQueue(store).snapshot(QueueFilter(), QueueSort(), page_size=5)
        event.remove(store.engine.sync_engine, "before_cursor_execute", seen)
        assert len(statements) == 2  # the stored counts and one page statement
        assert plain.counts is not None and sum(plain.counts.values()) == len(TaskStatus)
    finally:
        await store.close()


async def test_the_migration_backfills_counts_of_existing_tasks(db_url: str) -> None:
    """A workspace made before 0003 opens with counts equal to its tasks, and keeps them so."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config
    from sqlalchemy.ext.asyncio import create_async_engine

    from core.store.store import MIGRATIONS_DIR

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))

    def migrate(conn: sa.Connection, target: str, down: bool) -> None:
        cfg.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(cfg, target)

    store = await Store.open(db_url)
    ids = [(await store.create_task(f"before 0003, task {i}")).id for i in range(5)]
    await store.update_task(ids[0], status=TaskStatus.CLOSED, validation_outcome=ValidationOutcome.ACCEPTED)
    await store.close()
    engine = create_async_engine(db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(migrate, "0002", True)
            await conn.execute(sql_text("UPDATE tasks SET status = 'failed' WHERE id = :id"), {"id": ids[1]})
            await conn.run_sync(migrate, "head", False)
    finally:
        await engine.dispose()
    store = await Store.open(db_url)
    try:
        for flt in (
            QueueFilter(),
            QueueFilter(outcome=OutcomeFilter.ACCEPTED),
            QueueFilter(status=TaskStatus.FAILED),
        ):
            assert await queue_sql.stored_counts(store, flt) == await queue_sql.recount_by_status(store, flt)
        await store.update_task(ids[2], status=TaskStatus.NEEDS_REVIEW)
        assert await queue_sql.stored_counts(store, QueueFilter()) == await queue_sql.recount_by_status(
            store, QueueFilter()
        )
    finally:
        await store.close()
