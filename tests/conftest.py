"""Test-wide guards: headless Qt, no user configuration, and no network, ever."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from tests.fakes.llm_server import fake_llm, fake_llm_factory  # noqa: F401  (fixtures for every test)
from tests.pg import (
    REQUIRED_ENV,
    URL_ENV,
    PgServer,
    PgUnavailable,
    database_name,
    run_in_own_loop,
    start_server,
    worker_id,
)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["EVIDENCE_DESK_CONFIG_FILE"] = "/nonexistent/evidence-desk-test-config.toml"
for _key in list(os.environ):
    # The user's settings never leak into tests; EVIDENCE_DESK_TEST_* configure the tests themselves.
    if (
        _key.startswith("EVIDENCE_DESK_")
        and _key != "EVIDENCE_DESK_CONFIG_FILE"
        and not _key.startswith("EVIDENCE_DESK_TEST_")
    ):
        del os.environ[_key]


class NetworkBlocked(RuntimeError):
    pass


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


# An external PostgreSQL server the tests were pointed at is the one remote host they may reach.
_ALLOWED_HOSTS = {"127.0.0.1", "::1", "localhost"}
if os.environ.get(URL_ENV):
    _ALLOWED_HOSTS.add(str(make_url(os.environ[URL_ENV]).host))
    _ALLOWED_HOSTS.update(
        info[4][0] for info in socket.getaddrinfo(str(make_url(os.environ[URL_ENV]).host), None)
    )


def _is_local(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        return True
    host = address[0] if isinstance(address, tuple) else address
    return host in _ALLOWED_HOSTS or str(host).startswith("127.")


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if not _is_local(address):
        raise NetworkBlocked(f"test tried to reach the network: {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if not _is_local(address):
        raise NetworkBlocked(f"test tried to reach the network: {address!r}")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """platformdirs must never point a test at the real user's workspace."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    yield


EMPTY_WORKSPACE = "empty_workspace"
"""The marker of a test that needs its workspace database empty (see the comment above ``_migrate_to_head``)."""


def wants_empty(request: pytest.FixtureRequest) -> bool:
    return request.node.get_closest_marker(EMPTY_WORKSPACE) is not None


@pytest.fixture
def sqlite_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A workspace database file of this test's own, at the schema head (a copy of the template);
    no file at all for a test marked ``empty_workspace``."""
    path = tmp_path / "workspace.sqlite3"
    if not wants_empty(request):
        shutil.copyfile(request.getfixturevalue("sqlite_workspace_template"), path)
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One throw-away PostgreSQL server for the session (see tests/pg.py); skips when none can be had."""
    try:
        with start_server() as server:
            yield server
    except PgUnavailable as exc:
        if os.environ.get(REQUIRED_ENV):
            pytest.fail(f"PostgreSQL is required ({REQUIRED_ENV} is set) but unavailable: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")


_pg_databases = itertools.count(1)


@pytest.fixture
def pg_url(pg_server: PgServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A PostgreSQL database for this test alone, dropped afterwards: a copy of the template at the
    schema head, or an empty one for a test marked ``empty_workspace``."""
    template = "template0" if wants_empty(request) else request.getfixturevalue("pg_workspace_template")
    name = database_name(request.node.name, next(_pg_databases), worker_id())
    url = pg_server.create_database(name, template=template)
    yield url
    pg_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """The workspace database URL, once per engine: tests that take it run on both (at the schema
    head, or empty for a test marked ``empty_workspace``)."""
    return str(request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url"))


# Workspaces at the schema head, copied rather than migrated. A test whose first step opens a store
# would run every migration on a new database, about 0.1 s on SQLite and 0.15 s on PostgreSQL: 509
# times a core-suite run (90 s of the workers' time) while only the `store` fixtures took copies.
# The migrations run once per session (per xdist worker) into a template instead, and every test's
# `sqlite_url`, `pg_url` and `db_url` is a copy of it: a file copy on SQLite, CREATE DATABASE ...
# TEMPLATE on PostgreSQL. The store then opens a workspace already at head, as it opens every
# workspace after its first use. The migrations themselves still run in the tests marked
# `empty_workspace`: tests/core/test_store.py upgrades and downgrades them on both engines, the
# migrations' backfills are tested from old schemas, and every command-line test that names a new
# file under tmp_path starts from a missing one.


async def _migrate_to_head(url: str) -> None:
    from core.store import Store  # not at import: the desk's tests watch what their process imports

    store = await Store.open(url)
    await store.close()


@pytest.fixture(scope="session")
def sqlite_workspace_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite workspace file the migrations brought to the schema head, once per session."""
    path = tmp_path_factory.mktemp("workspace-template") / "workspace.sqlite3"
    run_in_own_loop(_migrate_to_head(f"sqlite+aiosqlite:///{path}"))
    with sqlite3.connect(path) as conn:  # everything in the main file: a copy of it is the workspace
        conn.execute("pragma wal_checkpoint(truncate)")
    return path


@pytest.fixture(scope="session")
def pg_workspace_template(pg_server: PgServer) -> Iterator[str]:
    """The name of a PostgreSQL database the migrations brought to the schema head, once per session."""
    name = f"workspace_template_{worker_id() or 'main'}_{os.getpid()}"
    url = pg_server.create_database(name)
    run_in_own_loop(_migrate_to_head(url))  # the store disposes its pool: no session left on the template
    yield name
    pg_server.drop_database(name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the tests marked ``slow`` (each seconds to tens of seconds of child processes) go first.
    worksteal hands each worker a third of the list in order, so they head the first worker's
    queue and run there one after another, while the other workers run the rest and take the tail
    of the first one's queue when theirs run dry. In file order the longest
    (tests/reliability/test_sigkill_loop.py) came last and ran alone at the end. The order is the
    same in every worker (xdist requires it), and the tests do not depend on it."""
    if worker_id():
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: else file order


# PySide6 6.11 can crash in interpreter finalisation, after every test has passed and the summary
# is printed, when Qt wrappers are torn down after the session's QApplication (seen once in a
# fresh-clone run: "1107 passed", then a segmentation fault and exit 139). Nothing is left to test
# at that point, so the session ends with pytest's own exit status and skips the finalisation.
_exit_status: int | None = None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _exit_status is not None and "PySide6.QtCore" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)
