"""Opening a workspace database: URLs, engines, file checks and schema migration.

Everything that can refuse a database lives here, so the refusals (not ours, too new, needs an
upgrade, unusable search index) are decided before any repository method can write to it.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, DBAPIError, IntegrityError, ProgrammingError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from core.errors import StoreError
from core.store.pgtext import install_nul_guard

SQLITE_HEADER = b"SQLite format 3\x00"
MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# The newest migration's revision; a test keeps it equal to alembic's head.
SCHEMA_HEAD = "big_values"
# How long an SQLite writer waits for another process's write lock before "database is locked".
DEFAULT_BUSY_TIMEOUT = 30.0
# The PostgreSQL advisory lock every process takes while checking and migrating the schema
# (an arbitrary 63-bit constant: "evidence-desk migrate").
MIGRATION_LOCK_KEY = 0x45_44_5F_6D_69_67_72_61


def normalise_url(url: str) -> str:
    """Accept plain paths and sync driver names; the store always runs on async drivers."""
    if "://" not in url:
        return f"sqlite+aiosqlite:///{Path(url).expanduser().resolve()}"
    if url.startswith(("sqlite://", "sqlite+pysqlite://")):
        return "sqlite+aiosqlite://" + url.split("://", 1)[1]
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg2://")):
        url = "postgresql+asyncpg://" + url.split("://", 1)[1]
    try:
        make_url(url)
    except (ArgumentError, ValueError):  # ValueError: SQLAlchemy's own parse of, say, the port
        raise StoreError(
            "the database URL cannot be parsed; use a file path or postgresql://user@host:port/database"
        ) from None
    return url


def sqlite_path(url: str) -> Path | None:
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def display_name(url: str) -> str:
    """The workspace as a person should see it: a file path, or the URL without its password."""
    path = sqlite_path(url)
    return str(path) if path else make_url(url).render_as_string(hide_password=True)


def safe_url(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "(an unparseable database URL)"


def db_message(exc: BaseException) -> str:
    """The driver's own words (say, which constraint failed), without SQLAlchemy's SQL dump."""
    orig = getattr(exc, "orig", None)
    text = str(orig) if orig is not None else str(exc)
    text = re.sub(r"^<class '[\w.]+'>: ", "", text.strip())
    return (text.splitlines() or [type(exc).__name__])[0]


# (sqlstate or words in the driver's message, what a person should be told) for the refusals
# people meet: a file that is damaged or cannot be written, a server that will not let them in.
_KNOWN_DB_ERRORS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("malformed", "file is not a database", "file is encrypted"),
        "is corrupt ({msg}); restore it from a backup",
    ),
    (("readonly", "read-only"), "is read-only ({msg}); nothing was written"),
    (("unable to open database file",), "cannot be opened ({msg}): check the folder exists and is writable"),
    (("locked", "busy"), "is busy: another process held its write lock too long ({msg})"),
    (("disk i/o error", "database or disk is full"), "could not be written ({msg})"),
    (("28000", "28P01", "password authentication failed", 'role "'), "refused the login ({msg})"),
    (("3D000",), "does not exist on the server ({msg}); create it first"),
)


def describe_db_error(exc: BaseException, url: str) -> str:
    """One line for any error the database or its driver raised: never SQL, never parameters."""
    name = safe_display_name(url)
    msg = db_message(exc)
    state = str(getattr(getattr(getattr(exc, "orig", None), "__cause__", None), "sqlstate", "") or "")
    if isinstance(exc, OSError) and getattr(exc, "orig", None) is None:
        what = exc.strerror or str(exc) or type(exc).__name__
        return f"cannot reach the database server of workspace {name}: {what}"
    lowered = msg.lower()
    for needles, told in _KNOWN_DB_ERRORS:
        if state in needles or any(n.lower() in lowered for n in needles):
            return f"workspace {name} " + told.format(msg=msg)
    return f"cannot use workspace {name}: {msg}"


def is_environmental(exc: DBAPIError) -> bool:
    """Damage, permissions, space or connection: the database, not the request, is at fault."""
    if isinstance(exc, (IntegrityError, ProgrammingError)):
        return False  # a request the schema refuses, or a bug: the caller or a traceback explains
    lowered = db_message(exc).lower()
    return "locked" not in lowered and "busy" not in lowered


def safe_display_name(url: str) -> str:
    try:
        return display_name(url)
    except (ArgumentError, ValueError):
        return "(an unparseable database URL)"


# libpq's URL options (what psql and psycopg accept) that asyncpg takes under another name or shape.
_PG_RENAMED = {"sslmode": "ssl", "connect_timeout": "timeout"}
_PG_PASSED = {"ssl", "timeout", "target_session_attrs", "prepared_statement_cache_size"}
_SSL_MODES = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}
# libpq's certificate options: asyncpg reads them only from a DSN's query string, so they travel
# in a host-less ``dsn`` beside the keyword arguments (which win for everything else).
_PG_SSL_FILES = ("sslrootcert", "sslcert", "sslkey", "sslcrl")


def asyncpg_options(url: str) -> tuple[str, dict[str, Any]]:
    """Move libpq-style query options into asyncpg's connect arguments; refuse unknown ones.

    ``?sslmode=disable`` is what people copy from other PostgreSQL tools; asyncpg spells it
    ``ssl`` and fails with a ``TypeError`` at the first connection when handed the libpq name.
    """
    parsed = make_url(url)
    connect: dict[str, Any] = {}
    files: dict[str, str] = {}
    for key, value in parsed.query.items():
        given = value[-1] if isinstance(value, tuple) else value
        name = _PG_RENAMED.get(key, key)
        if key in _PG_SSL_FILES:
            files[key] = given
        elif key == "application_name":
            connect.setdefault("server_settings", {})["application_name"] = given
        elif name not in _PG_PASSED:
            raise StoreError(
                f"the database URL option {key!r} is not supported; use sslmode, sslrootcert, sslcert, "
                "sslkey, sslcrl, connect_timeout, application_name or target_session_attrs"
            )
        elif name == "ssl" and given not in _SSL_MODES:
            raise StoreError(f"sslmode {given!r} is not one of {', '.join(sorted(_SSL_MODES))}")
        elif name == "timeout":
            try:
                connect["timeout"] = float(given)
            except ValueError:
                raise StoreError(f"connect_timeout {given!r} is not a number of seconds") from None
        elif name == "prepared_statement_cache_size":
            if not given.isdigit():
                raise StoreError(f"prepared_statement_cache_size {given!r} is not a whole number")
            connect[name] = int(given)
        else:
            connect[name] = given
    if files:
        connect["dsn"] = "postgresql://?" + urlencode(files)
    return parsed.set(query={}).render_as_string(hide_password=False), connect


def check_sqlite_file(path: Path) -> None:
    """Refuse anything that is not an SQLite file before SQLAlchemy can touch (or create) it."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a workspace database")
    if not path.exists():
        _check_parents(path)
        return
    if not path.is_file():  # opening a FIFO to read its header would wait for a writer forever
        raise StoreError(f"{path} is not a regular file, so not a workspace database")
    try:
        with path.open("rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"cannot read workspace database {path}: {exc.strerror or exc}") from None
    if header and header != SQLITE_HEADER:
        raise StoreError(
            f"{path} is not an Evidence Desk workspace (not an SQLite database); nothing was changed"
        )


def _check_parents(path: Path) -> None:
    """A new workspace's folders will be created; refuse at once if a file stands in the way."""
    for parent in path.parents:
        if parent.is_dir():
            return
        if parent.exists() or parent.is_symlink():
            raise StoreError(f"cannot create workspace {path}: {parent} is not a folder")


def _sqlite_listeners(sync_engine: Engine, *, immediate: bool, busy_timeout: float) -> None:
    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy emit BEGIN itself (pysqlite's implicit BEGIN is DEFERRED).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    begin_sql = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin_sql)


def make_engine(url: str, *, immediate: bool, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> AsyncEngine:
    """SQLite gets two engines: deferred transactions for reads, ``BEGIN IMMEDIATE`` for writes.

    Reads then never take the write lock (WAL lets them run beside a writer), while writers
    claim it up front instead of failing to upgrade a shared lock under contention.

    Every engine here is made with ``hide_parameters``: SQLAlchemy's error messages otherwise quote
    the statement's bound values (a task's text, a tool's result, whatever a payload held), and an
    error that reaches a log line or a person's terminal whole must not carry them.
    """
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": busy_timeout}, hide_parameters=True)
        _sqlite_listeners(engine.sync_engine, immediate=immediate, busy_timeout=busy_timeout)
        return engine
    connect: dict[str, Any] = {}
    if url.startswith("postgresql+asyncpg"):
        url, connect = asyncpg_options(url)
    engine = create_async_engine(url, pool_pre_ping=True, connect_args=connect, hide_parameters=True)
    install_nul_guard(engine)
    return engine


def make_thread_engine(path: Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Engine:
    """A plain (sync) SQLite write engine for a worker thread: the event log's writer.

    The event loop then does none of a batch's SQL, which keeps the agent loop's per-turn cost
    low; the same pragmas and ``BEGIN IMMEDIATE`` as the async write engine apply.
    """
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"timeout": busy_timeout, "check_same_thread": False},
        pool_size=1,
        max_overflow=0,
        hide_parameters=True,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        for pragma in ("foreign_keys=ON", f"busy_timeout={int(busy_timeout * 1000)}", "synchronous=NORMAL"):
            dbapi_conn.execute(f"PRAGMA {pragma}")
        # sqlite3 itself opens the transaction with BEGIN IMMEDIATE before the first write: the
        # same lock as the async write engine's listener claims, one statement fewer per batch.
        dbapi_conn.isolation_level = "IMMEDIATE"

    return engine


def make_thread_read_engine(url: str, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Engine:
    """A plain (sync) SQLite engine for reading the event log in one worker-thread hop.

    Through the async driver a read is a round trip to its connection thread per step (begin,
    execute, fetch, rollback); a team node's evidence read paid several of them, each a thread
    wake-up that a busy machine makes slow. Here the whole read runs in one ``to_thread`` call.
    Connections are in autocommit mode: each SELECT is its own snapshot, which WAL serves beside
    a writer without taking any lock. Built from the workspace's own URL, so its options (a
    read-only ``file:...?mode=ro&uri=true``) hold for these connections too. The pool keeps as
    many connections as asyncio's default executor has threads (opened only when used), so six
    team nodes reading at once do not open and close overflow connections; it has no overflow
    limit, so a burst of reads waits for a thread and never fails with "QueuePool limit reached".
    """
    engine = create_engine(
        make_url(url).set(drivername="sqlite"),
        connect_args={"timeout": busy_timeout, "check_same_thread": False},
        pool_size=min(32, (os.cpu_count() or 1) + 4),  # ThreadPoolExecutor's default max_workers
        max_overflow=-1,
        hide_parameters=True,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        dbapi_conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")

    return engine


async def prepare(
    engine: AsyncEngine,
    write_engine: AsyncEngine,
    write_lock: asyncio.Lock,
    url: str,
    *,
    migrate: bool,
) -> bool:
    """Check the database is ours and current (upgrading it if allowed); True if task search exists.

    Every failure, down to the driver's, becomes one ``StoreError`` line without SQL in it.
    """
    try:
        return await _prepare(engine, write_engine, write_lock, url, migrate=migrate)
    except (DBAPIError, OSError) as exc:
        raise StoreError(describe_db_error(exc, url)) from None


async def _prepare(
    engine: AsyncEngine,
    write_engine: AsyncEngine,
    write_lock: asyncio.Lock,
    url: str,
    *,
    migrate: bool,
) -> bool:
    await _migrate(engine, write_engine, write_lock, url, migrate)
    if engine.dialect.name != "sqlite":
        return False
    async with engine.connect() as conn:
        found = await conn.execute(
            text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tasks_fts'")
        )
        if found.first() is None:
            return False
        try:  # the index's triggers run on every task write: this SQLite must have trigram
            await conn.execute(text("SELECT 1 FROM tasks_fts WHERE tasks_fts MATCH 'abc' LIMIT 1"))
        except DatabaseError as exc:
            raise StoreError(
                f"workspace {display_name(url)} has a task search index this SQLite "
                f"({sqlite3.sqlite_version}) cannot use ({db_message(exc)}); open it with "
                "SQLite 3.34 or newer"
            ) from None
    return True


async def _migrate(
    engine: AsyncEngine, write_engine: AsyncEngine, write_lock: asyncio.Lock, url: str, migrate: bool
) -> None:
    if await _at_head(engine):
        return  # the common case: no alembic import (about 0.45 s) on the desk's start-up path
    if engine.dialect.name != "postgresql":
        await _check_and_upgrade(engine, write_engine, write_lock, url, migrate)
        return
    # Many processes may open a new PostgreSQL workspace at once; without one lock around the
    # check and the upgrade they race to create the same tables (pg_type unique violations) or
    # take each other's half-made schema for a foreign database. SQLite needs none: BEGIN
    # IMMEDIATE already serialises the upgrade transaction.
    async with engine.connect() as lock_conn:
        await lock_conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        await lock_conn.commit()
        try:
            await _check_and_upgrade(engine, write_engine, write_lock, url, migrate)
        finally:
            await lock_conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
            await lock_conn.commit()


async def _check_and_upgrade(
    engine: AsyncEngine, write_engine: AsyncEngine, write_lock: asyncio.Lock, url: str, migrate: bool
) -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    name = display_name(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    script = ScriptDirectory.from_config(cfg)
    known = {rev.revision for rev in script.walk_revisions()}
    head = script.get_current_head()
    try:
        async with engine.connect() as conn:
            current = await conn.run_sync(_current_revision)
            if current is not None and current not in known:
                raise StoreError(
                    f"workspace {name} was written by a newer Evidence Desk "
                    f"(schema {current}, this version knows up to {head}); nothing was changed"
                )
            if current == head:
                return
            if current is None and await conn.run_sync(_has_foreign_tables):
                raise StoreError(
                    f"{name} is a database but not an Evidence Desk workspace; nothing was changed"
                )
        if not migrate:
            raise StoreError(f"workspace {name} needs a schema upgrade to {head}")
        async with write_lock, write_engine.begin() as conn:
            await conn.run_sync(_upgrade, cfg)
        if engine.dialect.name == "sqlite":
            # WAL is a property of the file: set it once the file is known to be ours, never
            # on a database we are about to refuse.
            async with write_engine.connect() as conn:
                await conn.exec_driver_sql("COMMIT")  # leave the listener's BEGIN
                await conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    except (DBAPIError, OSError) as exc:
        raise StoreError(describe_db_error(exc, url)) from None


async def _at_head(engine: AsyncEngine) -> bool:
    try:
        async with engine.connect() as conn:
            current = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    except (DatabaseError, OSError):
        return False  # no version table, not a database, or unreachable: the full check explains
    return current == SCHEMA_HEAD


async def integrity_check(engine: AsyncEngine) -> str:
    if engine.dialect.name != "sqlite":
        return "ok"
    async with engine.connect() as conn:
        return str((await conn.execute(text("PRAGMA integrity_check"))).scalar())


def _current_revision(conn: Any) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def _has_foreign_tables(conn: Any) -> bool:
    from sqlalchemy import inspect

    return bool(inspect(conn).get_table_names())


def _upgrade(conn: Any, cfg: Any) -> None:
    from alembic import command

    cfg.attributes["connection"] = conn
    command.upgrade(cfg, "head")
