"""The live-update check for one row answers without asking the text index about every match."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, select

from core.domain.queue import QueueFilter
from core.store import Store, queue_sql
from core.store.models import TaskRow

TEXTS = [
    ("Tide gauge", "The HARBOUR gauge read 12.5 m"),
    ("100% sure", 'a "quoted" back\\slash and under_score'),
    ("Café crème", "ÉTÉ à la plage, Straße"),
    ("moon", "mo on"),
]
NEEDLES = [
    "gauge",
    "harbour",
    "HaRbOuR",
    "r g",
    "0% s",
    '"quoted"',
    "\\sl",
    "r_s",
    "été",
    "CRÈME",
    "ßE",
    "mo o",
    "zzz",
]


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_one_row_matches_as_the_whole_filter_does(loop: asyncio.AbstractEventLoop, db_url: str) -> None:
    async def main() -> None:
        store = await Store.open(db_url)
        try:
            ids = [(await store.create_task(text, title=title)).id for title, text in TEXTS]
            for needle in NEEDLES:
                flt = QueueFilter(text=needle)
                async with store.read_session() as s:
                    expected = set(
                        (await s.scalars(select(TaskRow.id).where(queue_sql.filter_clause(store, flt)))).all()
                    )
                for task_id in ids:
                    found = await queue_sql.match_row(store, task_id, flt)
                    assert found is not None
                    assert found[1] == (task_id in expected), (needle, found[0].title)
        finally:
            await store.close()

    loop.run_until_complete(main())


def test_an_ascii_row_is_checked_without_the_text_index(
    loop: asyncio.AbstractEventLoop, sqlite_url: str
) -> None:
    """The index's task ids are unindexed: asking it about one row costs every match it has."""

    async def main() -> None:
        store = await Store.open(sqlite_url)
        statements: list[str] = []

        def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            statements.append(statement)

        event.listen(store.engine.sync_engine, "before_cursor_execute", seen)
        try:
            plain = await store.create_task("The harbour gauge read 12.5 m", title="Tide gauge")
            accented = await store.create_task("Été à la plage", title="Café")
            statements.clear()
            found = await queue_sql.match_row(store, plain.id, QueueFilter(text="HARBOUR"))
            assert found is not None and found[1]
            found = await queue_sql.match_row(store, plain.id, QueueFilter(text="moon"))
            assert found is not None and not found[1]
            assert not [s for s in statements if "tasks_fts" in s]
            found = await queue_sql.match_row(store, accented.id, QueueFilter(text="la plage"))
            assert found is not None and found[1]  # non-ASCII text: the index's own folding decides
            assert [s for s in statements if "tasks_fts" in s]
        finally:
            await store.close()

    loop.run_until_complete(main())
