"""A throw-away PostgreSQL server for the test session, and a fresh database per test.

``start_server()`` runs Debian's own binaries (``/usr/lib/postgresql/<version>/bin``): ``initdb``
in a temporary folder, then ``pg_ctl start`` listening on 127.0.0.1 only, on a free port, with its
unix socket in that folder. PostgreSQL refuses to run as root, so as root (CI containers) the
cluster runs as the Debian ``postgres`` user, or ``nobody`` when there is none. Durability is off
(``fsync``, ``synchronous_commit``, ``full_page_writes``): the data is thrown away at the end.

``EVIDENCE_DESK_TEST_PG_URL`` (``postgresql+asyncpg://user@host:port/db``) points the tests at an
existing server instead; each test then gets its own database there too, dropped afterwards.

Under pytest-xdist every worker is a session of its own: it starts its own server (its own folder,
port and socket), and the names of its databases carry the worker's id, so workers sharing an
external server never meet. Two sessions starting at once can be handed the same free port; the
one that loses the race to bind it starts again on another.

Nothing here depends on timing: ``pg_ctl -w`` waits until the server accepts connections, and the
only timeouts bound a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

URL_ENV = "EVIDENCE_DESK_TEST_PG_URL"
REQUIRED_ENV = "EVIDENCE_DESK_TEST_PG_REQUIRED"
"""Set (as ``.ci/run`` does) to turn "PostgreSQL unavailable" from a skip into an error."""
SUPERUSER = "evidence_test"
START_TIMEOUT_S = 120  # bounds a hang only
PORT_ATTEMPTS = 5  # another process may bind the free port we were given before our server does


class PgUnavailable(Exception):
    """No PostgreSQL server can be had here; the reason says what to install or set."""


@dataclass(frozen=True)
class PgServer:
    """A server the tests may create and drop databases on."""

    admin_url: str
    """``postgresql+asyncpg://`` URL of a maintenance database (``postgres``) as a superuser."""
    control: ServerControl | None = None
    """How to stop and start the server: only for a private cluster (fault tests), never an external one."""
    file_copy: bool = False
    """Copy databases file by file (PostgreSQL 15+, private clusters): a template copied the default
    way, through the WAL, cost the server 64-84 ms of CPU per test's create-open-drop, against 47."""

    def url(self, database: str) -> str:
        return make_url(self.admin_url).set(database=database).render_as_string(hide_password=False)

    def create_database(self, name: str, template: str = "template0") -> str:
        """A new empty database (``template0``: nothing anyone added to ``template1``)."""
        strategy = " STRATEGY FILE_COPY" if self.file_copy else ""
        _admin(self.admin_url, f"CREATE DATABASE \"{name}\" TEMPLATE {template} ENCODING 'UTF8'{strategy}")
        return self.url(name)

    def drop_database(self, name: str) -> None:
        _admin(self.admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass(frozen=True)
class ServerControl:
    """``pg_ctl`` on a private cluster, for tests that take the database away under running processes."""

    pg_ctl: tuple[str, ...]
    """The ``pg_ctl`` command with its data folder (and the ``runuser`` prefix as root)."""
    options: str
    log: Path

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session is cut, the server is back when this returns."""
        # the log file, not pg_ctl's pipes: a restarted server holding them would never let us read to the end
        restart = [*self.pg_ctl, "--log", str(self.log), "-o", self.options, "-m", "fast", "-w"]
        _check([*restart, "-t", str(START_TIMEOUT_S), "restart"], "pg_ctl restart", self.log)

    def stop(self) -> None:
        """``pg_ctl stop -m fast``: nothing answers on the port until ``start``."""
        _check(
            [*self.pg_ctl, "-m", "fast", "-w", "-t", str(START_TIMEOUT_S), "stop"], "pg_ctl stop", self.log
        )

    def start(self) -> None:
        _check(
            [
                *self.pg_ctl,
                "--log",
                str(self.log),
                "-o",
                self.options,
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "start",
            ],
            "pg_ctl start",
            self.log,
        )


def _admin(admin_url: str, statement: str) -> None:
    """Run one statement on the maintenance database, from a thread with its own event loop.

    Fixtures are synchronous and may run while a test's loop (asyncio's or qasync's) is set but
    not running; a private loop in a worker thread touches neither.
    """
    import asyncpg  # the `test` extra installs it; start_server() checked it is importable

    url = make_url(admin_url)

    async def run() -> None:
        conn = await asyncpg.connect(
            host=url.host,
            port=url.port or 5432,
            user=url.username,
            password=url.password,
            database=url.database or "postgres",
            timeout=START_TIMEOUT_S,
        )
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    run_in_own_loop(run())


def run_in_own_loop(coro: Coroutine[object, object, None]) -> None:
    """Run ``coro`` to the end on a private loop in a worker thread: fixtures call this from a
    pytest-asyncio test's loop, where ``asyncio.run`` is refused."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()


def worker_id() -> str:
    """This session's pytest-xdist worker (``gw0``, ``gw1`` ...), or ``""`` without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "")


def database_name(test_name: str, counter: int, worker: str = "") -> str:
    """A legal, unique, readable database name for one test (63 bytes at most); ``worker`` keeps
    the names of xdist workers that share one server apart."""
    slug = re.sub(r"[^a-z0-9]+", "_", test_name.lower()).strip("_")
    return f"t{worker}{counter:04d}_{slug}"[:63]


def find_bindir() -> Path | None:
    """The newest Debian PostgreSQL server binaries, or those on PATH."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", p)],
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _run_as() -> list[str]:
    """The command prefix that drops root for PostgreSQL (it refuses to run as root)."""
    if os.geteuid() != 0:
        return []
    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"]
    raise PgUnavailable("running as root and there is no 'postgres' or 'nobody' user to run PostgreSQL as")


def _owner_ids() -> tuple[int, int] | None:
    prefix = _run_as()
    if not prefix:
        return None
    entry = pwd.getpwnam(prefix[2])
    return entry.pw_uid, entry.pw_gid


@dataclass(frozen=True)
class ServerSecurity:
    """How a private cluster lets clients in, for tests of password and TLS logins.

    ``hba`` replaces initdb's ``pg_hba.conf`` (keep a ``trust`` line for the superuser
    ``evidence_test`` on 127.0.0.1: the fixtures' admin connections use it); with ``tls`` = (certificate,
    key), the server turns ``ssl`` on with those files, copied into its data folder.
    """

    hba: str
    tls: tuple[Path, Path] | None = None


@contextlib.contextmanager
def start_server(security: ServerSecurity | None = None) -> Iterator[PgServer]:
    """Start a private cluster (or use ``EVIDENCE_DESK_TEST_PG_URL``) for the duration of the block.

    With ``security`` it is always a private cluster: an external server's logins are not ours to set.
    """
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        raise PgUnavailable("asyncpg is not installed (pip install -e '.[test]')") from None
    external = os.environ.get(URL_ENV)
    if external and security is None:
        yield PgServer(admin_url=external)
        return
    bindir = find_bindir()
    if bindir is None:
        raise PgUnavailable(
            "no PostgreSQL server binaries (install Debian's 'postgresql' package: `make test` and "
            f".ci/run do it when run as root), and {URL_ENV} is not set"
        )
    prefix = _run_as()
    root = Path(tempfile.mkdtemp(prefix=f"evidence-desk-pg-{worker_id() or 'main'}-"))
    owner = _owner_ids()
    if owner is not None:
        os.chown(root, *owner)
    data, log = root / "data", root / "server.log"
    started = False
    try:
        _check(
            [
                *prefix,
                str(bindir / "initdb"),
                "--pgdata",
                str(data),
                "--username",
                SUPERUSER,
                "--auth",
                "trust",
                "--encoding",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
            "initdb",
        )
        secure_options = _secure(data, security, owner)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            log.unlink(missing_ok=True)  # the log a failure reports is this attempt's own
            port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {port} -k {root} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
                + secure_options
            )
            try:
                _check(
                    [
                        *prefix,
                        str(bindir / "pg_ctl"),
                        "--pgdata",
                        str(data),
                        "--log",
                        str(log),
                        "-o",
                        options,
                        "-w",
                        "-t",
                        str(START_TIMEOUT_S),
                        "start",
                    ],
                    "pg_ctl start",
                    log,
                )
                break
            except RuntimeError as exc:
                if attempt == PORT_ATTEMPTS or "could not bind" not in str(exc):
                    raise
        started = True
        control = ServerControl(
            pg_ctl=(*prefix, str(bindir / "pg_ctl"), "--pgdata", str(data)), options=options, log=log
        )
        yield PgServer(
            admin_url=f"postgresql+asyncpg://{SUPERUSER}@127.0.0.1:{port}/postgres",
            control=control,
            file_copy=_major_version(bindir) >= 15,
        )
    finally:
        if started:
            subprocess.run(
                [*prefix, str(bindir / "pg_ctl"), "--pgdata", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=START_TIMEOUT_S,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)


def _major_version(bindir: Path) -> int:
    """The server binaries' major version (``pg_ctl (PostgreSQL) 15.18`` says 15); 0 when unreadable."""
    done = subprocess.run(
        [str(bindir / "pg_ctl"), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    found = re.search(r"(\d+)(?:\.\d+)?", done.stdout)
    return int(found.group(1)) if found else 0


def _secure(data: Path, security: ServerSecurity | None, owner: tuple[int, int] | None) -> str:
    """Write the cluster's ``pg_hba.conf`` and TLS files; the server options that turn TLS on."""
    if security is None:
        return ""
    written = [data / "pg_hba.conf"]
    written[0].write_text(security.hba, encoding="utf-8")
    options = ""
    if security.tls is not None:
        for source, name in zip(security.tls, ("server.crt", "server.key"), strict=True):
            shutil.copyfile(source, data / name)
            (data / name).chmod(0o600)  # PostgreSQL refuses a key others can read
            written.append(data / name)
        options = " -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key"
    if owner is not None:
        for path in written:
            os.chown(path, *owner)
    return options


def _check(cmd: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        if log is not None and log.exists():
            detail += "\n" + log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{what} failed ({done.returncode}): {detail}")
