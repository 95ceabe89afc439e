"""Noticing other processes' writes to the workspace, and announcing them on the event bus.

A desk only hears its own services on the bus. Another desk, the command line or a worker
writes to the same database without telling anyone, so the watcher turns their task writes into
the same typed notices (``TaskChanged``) the desk already turns into one-row refreshes.

- **SQLite:** ``PRAGMA data_version`` on a dedicated connection changes whenever *another*
  connection commits. Polling it costs one page-cache lookup, so the watcher asks about four
  times a second, on its own single worker thread (never the GUI thread), and reads the rows
  touched since its last look only when the number moved.
- **PostgreSQL:** the ``tasks_notify`` trigger (migration ``0006_notify``) sends ``NOTIFY`` with
  the task's id, status and version; the watcher ``LISTEN``s on one connection of its own. That
  connection dies with a server restart and nothing else would say so (reads recover through
  the pool, notices just stop), so the watcher notices its end (asyncpg's termination callback,
  and a ``SELECT 1`` every ``keepalive`` seconds for a silent network), announces
  ``WorkspaceConnection(online=False)``, reconnects with capped backoff and jitter, ``LISTEN``s
  again and announces ``online=True``: the desk then reloads its queue and task once, since the
  notices sent meanwhile were lost. One log line per state change.
- **SQLite on a share that disappears:** an open connection keeps reading a file whose folder was
  unmounted or moved (the descriptor stays valid), so each look also checks the path. When the
  file cannot be reached or read, the watcher announces ``online=False`` the same way, and
  ``online=True`` once the file opens and reads again (never creating an empty one in its place).

Claims and presence (who holds or looks at a task) change without touching the task row, so they
are announced apart, as ``ReviewersChanged``: on PostgreSQL from the ``evidence_desk_team``
channel (migration ``0010_presence``), on SQLite by comparing who-holds-what after each
data_version move (a few rows: one per open desk).

Either way a notice is published only for a task version the bus has not announced already, so
the desk's own writes are not refreshed twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.domain.status import TaskStatus
from core.events import (
    BusEvent,
    EventBus,
    ReviewersChanged,
    TaskChange,
    TaskChanged,
    TasksChanged,
    WorkspaceConnection,
)
from core.store import engine as engines
from core.store.base import StoreBase
from core.store.reachability import Backoff

log = logging.getLogger(__name__)

NOTIFY_CHANNEL = "evidence_desk_tasks"
TEAM_CHANNEL = "evidence_desk_team"  # claims and presence (payload: the task id)
POLL_INTERVAL = 0.25  # seconds between two data_version checks on SQLite
# Rows written by another process may carry a timestamp a little older than one already seen
# (its clock was read before its commit); each look re-reads this window and drops known versions.
CLOCK_SLACK_SECONDS = 5
# More changes than this in one look are announced as one TasksChanged (one queue reload).
MAX_SINGLE_NOTICES = 50
KEEPALIVE_S = 15.0  # a LISTEN connection silent this long is asked a SELECT 1

Row = tuple[str, str, int]  # task id, status, version
Holder = tuple[str, str, str]  # "claim" or "presence", task id, reviewer


class ChangeWatcher:
    """Announces task writes made through other database connections; start once, close once."""

    def __init__(
        self,
        store: StoreBase,
        bus: EventBus,
        *,
        interval: float = POLL_INTERVAL,
        keepalive: float = KEEPALIVE_S,
        backoff: Backoff | None = None,
    ) -> None:
        self._store = store
        self._keepalive = keepalive
        self._backoff = backoff or Backoff()
        self._lost: asyncio.Future[None] | None = None  # resolved when the LISTEN connection ends
        self.online = True
        self._bus = bus
        self._interval = interval
        self._known: dict[str, int] = {}  # task id -> newest version announced on the bus
        self._unsubscribe = bus.subscribe(self._on_bus)
        self._task: asyncio.Task[None] | None = None
        self._pg_conn: Any = None  # SQLAlchemy AsyncConnection held for LISTEN
        self._pending: list[Row] = []
        self._team_pending: set[str] = set()
        self._flush_scheduled = False
        self.ready = asyncio.Event()
        """Set once the watcher listens (tests create their outside write after it)."""

    # ------------------------------------------------------------------ lifetime
    async def start(self) -> None:
        if self._task is not None:
            return
        if self._store.is_sqlite:
            path = engines.sqlite_path(self._store.url)
            if path is None:
                self.ready.set()  # an in-memory database has no other writers
                return
            self._task = asyncio.get_running_loop().create_task(self._poll_sqlite(str(path)))
        else:
            await self._listen_pg()
            self._task = asyncio.get_running_loop().create_task(self._keep_listening())
            self.ready.set()

    def stop(self) -> asyncio.Task[None] | None:
        """Stop announcing now (a window closing cannot await); returns what is still winding down."""
        self._unsubscribe()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        conn, self._pg_conn = self._pg_conn, None
        if conn is not None:
            return asyncio.get_event_loop().create_task(self._close_pg(conn))
        return task

    async def close(self) -> None:
        task = self.stop()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _close_pg(self, conn: Any) -> None:
        with contextlib.suppress(Exception):
            raw = await conn.get_raw_connection()
            await raw.driver_connection.remove_listener(NOTIFY_CHANNEL, self._on_notify)
            await raw.driver_connection.remove_listener(TEAM_CHANNEL, self._on_team_notify)
        with contextlib.suppress(Exception):
            await conn.close()

    # ------------------------------------------------------------------ SQLite
    async def _poll_sqlite(self, path: str) -> None:
        loop = asyncio.get_running_loop()
        # One thread owns the connection: every call, including close, runs there in order.
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evidence-desk-watch")
        conn: sqlite3.Connection | None = None
        try:
            conn = await loop.run_in_executor(executor, _open_sqlite, path, self._store.busy_timeout)
            version, mark = await loop.run_in_executor(executor, _sqlite_start, conn)
            holders = await loop.run_in_executor(executor, _sqlite_holders, conn)
            self.ready.set()
            while True:
                await asyncio.sleep(self._interval)
                try:
                    now = await loop.run_in_executor(executor, _data_version, conn, path)
                    if now == version:
                        continue
                    rows, new_mark = await loop.run_in_executor(executor, _sqlite_changed, conn, mark)
                    new_holders = await loop.run_in_executor(executor, _sqlite_holders, conn)
                except (sqlite3.Error, OSError) as exc:
                    if not _sqlite_gone(exc):  # a locked database: try again next tick
                        log.warning("workspace watch: %s", exc)
                        continue
                    executor.submit(conn.close)
                    conn = None
                    conn, version, mark, holders = await self._reopen_sqlite(path, executor)
                    continue
                version, mark = now, new_mark or mark
                self._announce(rows)
                moved = sorted({task_id for _kind, task_id, _who in holders ^ new_holders})
                holders = new_holders
                if moved:
                    self._bus.publish(ReviewersChanged(task_ids=tuple(moved)))
        finally:
            if conn is not None:
                executor.submit(conn.close)
            executor.shutdown(wait=False)

    async def _reopen_sqlite(
        self, path: str, executor: ThreadPoolExecutor
    ) -> tuple[sqlite3.Connection, int, str, set[Holder]]:
        """The workspace file went away (a network share that disappeared, a folder moved): say so,
        wait for it with capped backoff and jitter, and announce it back once it reads again."""
        loop = asyncio.get_running_loop()
        self.online = False
        log.warning("workspace offline, reconnecting")
        self._bus.publish(WorkspaceConnection(online=False))
        self._backoff.reset()
        while True:
            await asyncio.sleep(self._backoff.next_delay())
            try:
                found = await loop.run_in_executor(executor, _reopen_existing, path, self._store.busy_timeout)
                break
            except (sqlite3.Error, OSError) as exc:
                log.debug("workspace watch: still offline: %s", exc)
        self.online = True
        log.warning("workspace reconnected")
        self._bus.publish(WorkspaceConnection(online=True))
        return found

    # ------------------------------------------------------------------ PostgreSQL
    async def _listen_pg(self) -> None:
        conn = await self._store.engine.connect()
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        try:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection  # asyncpg's Connection
            await driver.add_listener(NOTIFY_CHANNEL, self._on_notify)
            await driver.add_listener(TEAM_CHANNEL, self._on_team_notify)
            driver.add_termination_listener(lambda _conn: _settle(lost))
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise
        self._pg_conn, self._lost = conn, lost

    async def _keep_listening(self) -> None:
        """Wait for the LISTEN connection to end, then get it back; forever, until stopped."""
        while True:
            await self._until_lost()
            self.online = False
            log.warning("workspace offline, reconnecting")
            self._bus.publish(WorkspaceConnection(online=False))
            conn, self._pg_conn = self._pg_conn, None
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.invalidate()
                await self._close_pg(conn)
            self._backoff.reset()
            while True:
                await asyncio.sleep(self._backoff.next_delay())
                try:
                    await self._listen_pg()
                    break
                except Exception as exc:  # the next try, after a longer wait, may find it back
                    log.debug("workspace watch: still offline: %s", exc)
            self.online = True
            log.warning("workspace reconnected")
            self._bus.publish(WorkspaceConnection(online=True))

    async def _until_lost(self) -> None:
        """Return once the LISTEN connection is gone: closed under us, or not answering a SELECT 1."""
        while True:
            lost = self._lost
            assert lost is not None
            try:
                await asyncio.wait_for(asyncio.shield(lost), timeout=self._keepalive)
                return
            except TimeoutError:
                pass
            try:
                raw = await self._pg_conn.get_raw_connection()
                await asyncio.wait_for(raw.driver_connection.execute("SELECT 1"), timeout=self._keepalive)
            except Exception:
                return

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        """asyncpg's listener callback, called on the loop; notices arrive in commit order."""
        try:
            data = json.loads(payload)
            row: Row = (str(data["id"]), str(data["status"]), int(data["version"]))
        except (ValueError, KeyError, TypeError):
            log.warning("workspace watch: unreadable notification %r", payload[:200])
            return
        self._pending.append(row)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _on_team_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        """A claim or presence row of task ``payload`` changed (inserted, renewed or deleted)."""
        self._team_pending.add(payload[:64])
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        rows, self._pending = self._pending, []
        self._announce(rows)
        team, self._team_pending = self._team_pending, set()
        if team:
            self._bus.publish(ReviewersChanged(task_ids=tuple(sorted(team))))

    # ------------------------------------------------------------------ announcing
    def _on_bus(self, event: BusEvent) -> None:
        if isinstance(event, TaskChanged) and event.version > self._known.get(event.task_id, 0):
            self._known[event.task_id] = event.version

    def _announce(self, rows: Iterable[Row]) -> None:
        fresh: dict[str, Row] = {}
        for row in rows:
            task_id, _status, version = row
            newest = max(self._known.get(task_id, 0), fresh[task_id][2] if task_id in fresh else 0)
            if version > newest:
                fresh[task_id] = row
        if not fresh:
            return
        if len(fresh) > MAX_SINGLE_NOTICES:
            for task_id, (_id, _status, version) in fresh.items():
                self._known[task_id] = version
            self._bus.publish(TasksChanged(task_ids=tuple(fresh)))
            return
        for task_id, status, version in fresh.values():
            try:
                known_status = TaskStatus(status)
            except ValueError:
                continue
            change = TaskChange.CREATED if version == 1 else TaskChange.STATUS
            self._bus.publish(
                TaskChanged(task_id=task_id, change=change, status=known_status, version=version)
            )


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _open_sqlite(path: str, busy_timeout: float) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=busy_timeout, check_same_thread=False, isolation_level=None)


def _reopen_existing(path: str, busy_timeout: float) -> tuple[sqlite3.Connection, int, str, set[Holder]]:
    """The workspace file again with the watcher's starting state, only if it is there and reads:
    never a new empty database in its place (``mode=rw``)."""
    uri = Path(os.path.abspath(path)).as_uri() + "?mode=rw"
    conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout, check_same_thread=False, isolation_level=None)
    try:
        version, mark = _sqlite_start(conn)
        return conn, version, mark, _sqlite_holders(conn)
    except BaseException:
        conn.close()
        raise


def _data_version(conn: sqlite3.Connection, path: str | None = None) -> int:
    """The database's change counter; with ``path``, first check the file is still reachable there.

    An open connection keeps reading a file whose folder was moved or unmounted under it (Linux
    keeps the open descriptor), so only a look at the path tells the workspace has gone away.
    """
    if path is not None:
        os.stat(path)
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


# sqlite3's primary result codes that mean "the file is not there or not readable", not "busy".
_SQLITE_GONE = {10, 14, 26}  # SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_NOTADB


def _sqlite_gone(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _SQLITE_GONE


def _sqlite_start(conn: sqlite3.Connection) -> tuple[int, str]:
    mark = conn.execute("SELECT max(updated_at) FROM tasks").fetchone()[0]
    return _data_version(conn), str(mark or "")


def _sqlite_holders(conn: sqlite3.Connection) -> set[Holder]:
    """Who holds or looks at which task now (leases in force only, so a lapse counts as a change)."""
    rows = conn.execute(
        "SELECT 'claim', task_id, reviewer FROM claims WHERE expires_at > ? "
        "UNION ALL SELECT 'presence', task_id, reviewer FROM presence WHERE expires_at > ?",
        (_sqlite_now(), _sqlite_now()),
    ).fetchall()
    return {(str(k), str(t), str(r)) for k, t, r in rows}


def _sqlite_now() -> str:
    """Now in the form SQLAlchemy stores times in SQLite (UTC, ``YYYY-MM-DD HH:MM:SS.ffffff``)."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _sqlite_changed(conn: sqlite3.Connection, mark: str) -> tuple[list[Row], str]:
    """Tasks written since ``mark`` (less the clock slack), and the new mark."""
    rows = conn.execute(
        "SELECT id, status, version, updated_at FROM tasks "
        f"WHERE updated_at >= datetime(?, '-{CLOCK_SLACK_SECONDS} seconds') ORDER BY updated_at",
        (mark or "1970-01-01",),
    ).fetchall()
    new_mark = str(rows[-1][3]) if rows else mark
    return [(str(r[0]), str(r[1]), int(r[2])) for r in rows], new_mark


__all__ = ["NOTIFY_CHANNEL", "TEAM_CHANNEL", "ChangeWatcher"]
