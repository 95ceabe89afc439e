from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from core.domain import TaskStatus
from core.errors import StoreError, VersionConflict
from core.store import NewEvent, Store


async def test_concurrent_writers_keep_seq_contiguous(db_url: str) -> None:
    store = await Store.open(db_url)
    task = await store.create_task("concurrency")
    session = await store.create_session(task_id=task.id, kind="main")

    async def writer(w: int) -> None:
        for i in range(200):
            await store.append_event(session.id, "probe", {"writer": w, "i": i}, run_id=f"run{w}")
            if i % 50 == 0:
                await asyncio.sleep(0)

    await asyncio.gather(*(writer(w) for w in range(3)))
    events = await store.get_session_events(session.id)
    assert [e.seq for e in events] == list(range(1, 601))
    seen = {(e.payload["writer"], e.payload["i"]) for e in events}
    assert len(seen) == 600  # nothing lost, nothing duplicated
    per_run = await store.get_run_event_records(session.id, "run1")
    assert [e.payload["i"] for e in per_run] == list(range(200))
    await store.close()


async def test_batch_append_is_atomic_and_contiguous(db_url: str) -> None:
    store = await Store.open(db_url)
    session = await store.create_session(task_id=None, kind="main")
    await store.append_event(session.id, "a", {})
    records = await store.append_events(session.id, [NewEvent(kind="b", payload={"n": n}) for n in range(5)])
    assert [r.seq for r in records] == [2, 3, 4, 5, 6]
    with pytest.raises(StoreError, match="no session"):
        await store.append_events("missing", [NewEvent(kind="x", payload={})])
    await store.close()


async def test_two_stores_on_one_file_share_the_log(db_url: str) -> None:
    """Two processes (here: two engines) appending to one session never collide on seq."""
    first, second = await Store.open(db_url), await Store.open(db_url)
    session = await first.create_session(task_id=None, kind="main")

    async def writer(store: Store, tag: str) -> None:
        for i in range(50):
            await store.append_event(session.id, tag, {"i": i})

    await asyncio.gather(writer(first, "a"), writer(second, "b"))
    events = await first.get_session_events(session.id)
    assert [e.seq for e in events] == list(range(1, 101))
    await first.close()
    await second.close()


async def test_two_stores_interleave_appends_and_versions(db_url: str) -> None:
    """Two stores (two processes) on one database: appends from both, queued and direct, never
    collide on seq, and a stale version is refused across them."""
    first, second = await Store.open(db_url), await Store.open(db_url)
    task = await first.create_task("two writers")
    assert task.main_session_id is not None
    session = task.main_session_id

    async def writer(store: Store, w: int) -> None:
        for i in range(100):
            await store.append_event(session, "probe", {"w": w, "i": i})
        store.enqueue_events(session, [NewEvent(kind="queued", payload={"w": w})])
        await store.flush()

    await asyncio.gather(writer(first, 0), writer(second, 1), writer(first, 2))
    events = await first.get_session_events(session)
    assert [e.seq for e in events] == list(range(1, 304))
    moved = await first.update_task(task.id, expected_version=task.version, status=TaskStatus.RUNNING)
    with pytest.raises(VersionConflict):
        await second.update_task(task.id, expected_version=task.version, status=TaskStatus.CLOSED)
    assert (await second.get_task(task.id)).version == moved.version
    await first.close()
    await second.close()


@pytest.mark.empty_workspace  # the first upgrade starts from nothing
async def test_migrations_upgrade_to_head_and_downgrade_to_base(db_url: str) -> None:
    """Every migration runs both ways on this engine, and the store opens what they leave."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config
    from sqlalchemy.ext.asyncio import create_async_engine

    from core.store.models import Base
    from core.store.store import MIGRATIONS_DIR, SCHEMA_HEAD

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))

    def migrate(conn: sa.Connection, target: str) -> tuple[set[str], str | None]:
        cfg.attributes["connection"] = conn
        if target == "base":
            command.downgrade(cfg, target)
        else:
            command.upgrade(cfg, target)
        tables = set(sa.inspect(conn).get_table_names())
        version = conn.execute(sa.text("select version_num from alembic_version")).scalar()
        return tables, version

    engine = create_async_engine(db_url)
    try:
        async with engine.begin() as conn:
            tables, version = await conn.run_sync(migrate, "head")
        assert set(Base.metadata.tables) <= tables and version == SCHEMA_HEAD
        async with engine.begin() as conn:
            tables, version = await conn.run_sync(migrate, "base")
        assert tables == {"alembic_version"} and version is None
        async with engine.begin() as conn:
            tables, version = await conn.run_sync(migrate, "head")  # the downgrades left nothing behind
        assert version == SCHEMA_HEAD
    finally:
        await engine.dispose()
    store = await Store.open(db_url)
    assert (await store.get_task((await store.create_task("after the round trip")).id)).version == 1
    await store.close()


async def test_optimistic_version_conflict_changes_nothing(db_url: str) -> None:
    store = await Store.open(db_url)
    task = await store.create_task("versioned")
    moved = await store.update_task(task.id, expected_version=task.version, status=TaskStatus.RUNNING)
    assert moved.version == task.version + 1
    with pytest.raises(VersionConflict, match="changed since it was read"):
        await store.update_task(task.id, expected_version=task.version, status=TaskStatus.CLOSED)
    assert (await store.get_task(task.id)).status is TaskStatus.RUNNING
    await store.close()


async def test_not_a_database_is_refused_untouched(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.sqlite3"
    bogus.write_bytes(b"these are my notes, not a database\n" * 10)
    before = bogus.read_bytes()
    with pytest.raises(StoreError, match="not an SQLite database"):
        await Store.open(str(bogus))
    assert bogus.read_bytes() == before
    assert not (tmp_path / "notes.sqlite3-wal").exists()


async def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("create table invoices (id integer primary key)")
    before = other.read_bytes()
    with pytest.raises(StoreError, match="not an Evidence Desk workspace"):
        await Store.open(str(other))
    assert other.read_bytes() == before  # not even the journal mode was touched
    with sqlite3.connect(other) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
    assert tables == {"invoices"}


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ws.sqlite3"
    store = await Store.open(str(path))
    await store.create_task("keep me")
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("update alembic_version set version_num = '9999_from_the_future'")
    with pytest.raises(StoreError, match="newer Evidence Desk"):
        await Store.open(str(path))
    with sqlite3.connect(path) as conn:
        assert conn.execute("select count(*) from tasks").fetchone() == (1,)
        assert conn.execute("select version_num from alembic_version").fetchone() == ("9999_from_the_future",)


async def test_reopen_is_idempotent_and_wal_is_on(tmp_path: Path) -> None:
    path = tmp_path / "ws.sqlite3"
    for _ in range(2):
        store = await Store.open(str(path))
        await store.create_task("again")
        assert await store.integrity_check() == "ok"
        await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("pragma journal_mode").fetchone()[0] == "wal"
        assert conn.execute("select count(*) from tasks").fetchone() == (2,)


async def test_task_lookup_by_short_prefix(db_url: str) -> None:
    store = await Store.open(db_url)
    task = await store.create_task("prefix me")
    assert (await store.get_task(task.id[:8])).id == task.id
    with pytest.raises(StoreError, match="no task"):
        await store.get_task("zzzzzzzz")
    await store.close()


async def test_write_behind_keeps_order_and_reports_failures(db_url: str) -> None:
    store = await Store.open(db_url)
    session = await store.create_session(task_id=None, kind="main")
    store.enqueue_events(session.id, [NewEvent(kind="queued", payload={"n": n}) for n in range(3)])
    await store.append_event(session.id, "direct", {})
    events = await store.get_session_events(session.id)
    assert [(e.seq, e.kind) for e in events] == [(1, "queued"), (2, "queued"), (3, "queued"), (4, "direct")]

    other = await store.create_session(task_id=None, kind="node")
    # One batch: a bad session between two good ones must not cost the good ones their events.
    store.enqueue_events(session.id, [NewEvent(kind="before", payload={})])
    store.enqueue_events("no-such-session", [NewEvent(kind="lost", payload={})])
    store.enqueue_events(other.id, [NewEvent(kind="after", payload={})])
    await store.flush()  # a flush for nobody in particular blames nobody
    assert [e.kind for e in await store.get_session_events(other.id)] == ["after"]
    assert (await store.get_session_events(session.id))[-1].kind == "before"
    with pytest.raises(StoreError, match="could not be written"):
        await store.flush("no-such-session")  # the owner of the failed session is told
    await store.flush("no-such-session")  # once
    await store.close()


async def test_write_behind_waits_out_another_writer(tmp_path: Path) -> None:
    """Another process holding SQLite's write lock delays the write-behind; nothing is lost.

    The store waits on SQLite's busy timeout (30 s) and retries past it; the test releases the
    lock well inside that, at no particular moment: the outcome is the same either way.
    """
    path = tmp_path / "workspace.sqlite3"
    store = await Store.open(str(path))
    session = await store.create_session(task_id=None, kind="main")
    blocker = sqlite3.connect(path)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        store.enqueue_events(session.id, [NewEvent(kind="queued", payload={"n": 1})])
        flushed = asyncio.create_task(store.flush(session.id))
        for _ in range(20):  # let the writer start; how far it gets does not matter
            await asyncio.sleep(0)
        assert not flushed.done()  # the lock is still held: nothing can have been committed
        blocker.rollback()
    finally:
        blocker.close()
    await flushed
    assert [e.kind for e in await store.get_session_events(session.id)] == ["queued"]
    await store.close()


async def test_text_filter_is_literal_and_case_insensitive(db_url: str) -> None:
    store = await Store.open(db_url)
    for text in ("Tides and the MOON", "100% sure_thing", "Other"):
        await store.create_task(text)
    assert [t.text for t in await store.list_tasks(text="moon")] == ["Tides and the MOON"]
    assert [t.text for t in await store.list_tasks(text="100%")] == ["100% sure_thing"]
    assert [t.text for t in await store.list_tasks(text="sure_t")] == ["100% sure_thing"]
    if store.is_sqlite:  # trigram index: any substring; PostgreSQL's word index: word starts only
        assert [t.text for t in await store.list_tasks(text="e_t")] == ["100% sure_thing"]
    else:
        assert await store.list_tasks(text="e_t") == []
    assert await store.list_tasks(text="%") == [t for t in await store.list_tasks(text="100%")]
    counts = await store.count_tasks_by_status(text="_")
    assert sum(counts.values()) == 1
    await store.close()


def test_schema_head_constant_matches_the_migrations() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from core.store.store import MIGRATIONS_DIR, SCHEMA_HEAD

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(cfg).get_current_head() == SCHEMA_HEAD


async def test_upgrade_from_the_first_schema_indexes_existing_tasks(tmp_path: Path) -> None:
    """A workspace written by the first release is upgraded in place and its tasks are searchable."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config

    from core.store.store import MIGRATIONS_DIR

    path = tmp_path / "old.sqlite3"
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
        conn.execute(
            sa.text(
                "insert into tasks (id, title, text, status, attempt_count, read_only, version, created_at,"
                " updated_at) values ('old1', 'Tides', 'What causes TIDES?', 'open', 0, 0, 1,"
                " '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
            )
        )
    engine.dispose()
    store = await Store.open(str(path))
    assert [t.id for t in await store.list_tasks(text="causes tid")] == ["old1"]
    moved = await store.update_task("old1", text="Why do oceans rise?")
    assert await store.list_tasks(text="causes tid") == []
    assert [t.id for t in await store.list_tasks(text="oceans")] == [moved.id]
    await store.close()


async def test_a_search_index_this_sqlite_cannot_use_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "ws.sqlite3"
    store = await Store.open(str(path))
    await store.create_task("keep me")
    await store.close()
    with sqlite3.connect(path) as conn:  # stand-in for an index built by a newer SQLite
        conn.execute("drop trigger tasks_fts_ai")
        conn.execute("drop trigger tasks_fts_ad")
        conn.execute("drop trigger tasks_fts_au")
        conn.execute("drop table tasks_fts")
        conn.execute("create table tasks_fts (task_id text, title text, text text)")
    before = path.read_bytes()
    with pytest.raises(StoreError, match="task search index this SQLite"):
        await Store.open(str(path))
    assert path.read_bytes() == before


async def test_text_with_nul_bytes_is_stored_on_every_engine(store: Store) -> None:
    """PostgreSQL refuses U+0000 in text; the write must still succeed, with the NUL made visible."""
    task = await store.create_task("before\x00after", title="nul\x00title")
    assert task.main_session_id is not None
    await store.append_event(task.main_session_id, "probe", {"v": "x\x00y"}, content="tool\x00output")
    stored = await store.get_task(task.id)
    [event] = await store.get_session_events(task.main_session_id)
    if store.is_sqlite:
        assert stored.text == "before\x00after" and event.content == "tool\x00output"
    else:
        assert stored.text == "before\ufffdafter" and event.content == "tool\ufffdoutput"
    assert event.payload["v"] in ("x\x00y", "x\ufffdy")
