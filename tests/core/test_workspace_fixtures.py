"""The workspace fixtures every store test starts from: a copy at the schema head, unless the test
is marked ``empty_workspace`` (a first run, a migration, a command refused before it creates one).

Those tests only mean what they say if their database really is empty: a copy at head would let a
first-run test pass without the first run's migrations ever running."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from core.store.engine import SCHEMA_HEAD


async def _tables_and_version(url: str) -> tuple[set[str], str | None]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:

            def read(sync: sa.Connection) -> tuple[set[str], str | None]:
                tables = set(sa.inspect(sync).get_table_names())
                if "alembic_version" not in tables:
                    return tables, None
                return tables, sync.execute(sa.text("select version_num from alembic_version")).scalar()

            return await conn.run_sync(read)
    finally:
        await engine.dispose()


async def test_each_engines_workspace_is_at_the_schema_head(db_url: str) -> None:
    tables, version = await _tables_and_version(db_url)
    assert version == SCHEMA_HEAD and {"tasks", "events", "sessions"} <= tables


@pytest.mark.empty_workspace
async def test_a_test_marked_empty_gets_an_empty_database(db_url: str) -> None:
    tables, version = await _tables_and_version(db_url)
    assert tables == set() and version is None


@pytest.mark.empty_workspace
def test_a_test_marked_empty_gets_no_sqlite_file(sqlite_url: str) -> None:
    assert not Path(str(make_url(sqlite_url).database)).exists()
