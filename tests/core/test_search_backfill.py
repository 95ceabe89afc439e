"""A workspace made before 0009_search: titles and text are indexed by the migration, the rest by
the first search (the migration leaves the backfill pending), and nothing is indexed twice."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.ext.asyncio import create_async_engine

from core.search.index import DocKind, backfill_pending
from core.search.query import SearchQuery, SearchService
from core.store import Store
from core.store.store import MIGRATIONS_DIR
from tests.core.test_search import seed


async def test_first_search_backfills_an_old_workspace(db_url: str) -> None:
    store = await Store.open(db_url)
    task_id = await seed(store)
    await store.close()
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))

    def migrate(conn: sa.Connection, target: str, down: bool) -> None:
        cfg.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(cfg, target)

    engine = create_async_engine(db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(migrate, "0007_claims", True)
            await conn.run_sync(migrate, "head", False)
    finally:
        await engine.dispose()
    store = await Store.open(db_url)
    try:
        assert await backfill_pending(store)
        search = SearchService(store)
        for text, kind in (
            ("heron", DocKind.TITLE),
            ('"marsh warden"', DocKind.EVIDENCE),
            ("kingfisher", DocKind.NOTE),
        ):
            hits = (await search.search(SearchQuery(text=text))).hits
            assert [(h.task_id, h.kind) for h in hits] == [(task_id, kind)], text
        assert not await backfill_pending(store)
        again = SearchService(store)
        assert len((await again.search(SearchQuery(text="cormorant"))).hits) == 1
    finally:
        await store.close()
