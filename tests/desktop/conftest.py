"""Desk test fixtures: one qasync loop per test, and small scripted workspaces.

pytest-qt owns the session's QApplication (``qapp``) but not an asyncio loop. Following qasync's
own tests, each test gets a fresh ``qasync.QEventLoop`` (``qloop``): scenarios run with
``qloop.run_until_complete(...)``, exceptions the loop reports are collected and re-raised at
teardown, and the loop is closed. Inside a running scenario, waits are awaited (``wait_signal``,
``wait_until``) rather than spun with ``qtbot.waitUntil``: a nested Qt event loop inside a
running coroutine would step other asyncio tasks re-entrantly.

Like napari's ``conftest.py``, every desk test fails if it leaves a QThread running, a
QThreadPool busy or a QTimer active once its widgets are closed and deleted.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import traceback
import weakref
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import QCoreApplication, QEvent, QSettings, QThread, QThreadPool, QTimer, SignalInstance
from PySide6.QtWidgets import QApplication

from core.config import Settings, load_settings
from core.domain import TaskStatus
from core.store import TaskRecord
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.gates import HANG_S, GatedGateway
from tests.gates import wait_until as wait_until  # the desk tests import their waits from here

if TYPE_CHECKING:
    from pytestqt.qtbot import QtBot

    from desktop.views.window.main_window import MainWindow

T = TypeVar("T")

# Qt's offscreen screen is 800x800, smaller than the desk's default window; the desk fits its first
# window to the screen it opens on (desktop/views/window/layout.py), so the desk's tests get a
# common monitor's 1920x1080. A test about a small screen passes the geometry it means.
if os.environ.get("QT_QPA_PLATFORM") == "offscreen":
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={Path(__file__).with_name('screen.json')}"


def _started_at() -> str:
    """Where our code started a thread or timer: the innermost frame in desktop/ or tests/."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if (
            "/desktop/" in frame.filename or "/tests/" in frame.filename
        ) and "conftest" not in frame.filename:
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return "outside our code (a library)"


def _still(check: Callable[[], bool]) -> bool:
    """``check()`` on a Qt object, False once Qt has deleted it (a deleted timer cannot fire)."""
    try:
        return check()
    except RuntimeError:  # "Internal C++ object (...) already deleted."
        return False


def _delete_closed_widgets() -> None:
    """pytest-qt closed the test's widgets and called deleteLater(); let those deletions happen."""
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.fixture(autouse=True)
def _dangling_qthreads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    started: weakref.WeakKeyDictionary[QThread, str] = weakref.WeakKeyDictionary()
    real_start = QThread.start

    def start(self: QThread, *args: Any) -> None:
        started[self] = _started_at()
        real_start(self, *args)

    monkeypatch.setattr(QThread, "start", start)
    yield
    _delete_closed_widgets()
    dangling = [(thread, where) for thread, where in list(started.items()) if _still(thread.isRunning)]
    for thread, _ in dangling:
        thread.quit()
        thread.wait(int(HANG_S * 1000))
    if dangling:
        raise AssertionError(
            "the test left QThreads running (quit and wait for them, or let their owner do it):\n"
            + "\n".join(f"  started at {where}" for _, where in dangling)
        )


@pytest.fixture(autouse=True)
def _dangling_qthread_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    used: weakref.WeakKeyDictionary[QThreadPool, list[str]] = weakref.WeakKeyDictionary()
    real_start = QThreadPool.start

    def start(self: QThreadPool, *args: Any) -> None:
        used.setdefault(self, []).append(_started_at())
        real_start(self, *args)

    monkeypatch.setattr(QThreadPool, "start", start)
    yield
    busy = []
    for pool, where in list(used.items()):
        pool.clear()  # queued work never starts
        if not pool.waitForDone(0):
            busy.append(where)
            pool.waitForDone(int(HANG_S * 1000))
    if busy:
        raise AssertionError(
            "the test left QThreadPool work running:\n"
            + "\n".join(f"  started at {w}" for where in busy for w in where)
        )


@pytest.fixture(autouse=True)
def _dangling_qtimers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    started: weakref.WeakKeyDictionary[QTimer, str] = weakref.WeakKeyDictionary()
    real_start = QTimer.start

    def start(self: QTimer, *args: Any) -> None:
        started[self] = _started_at()
        real_start(self, *args)

    monkeypatch.setattr(QTimer, "start", start)
    yield
    _delete_closed_widgets()
    active = [(timer, where) for timer, where in list(started.items()) if _still(timer.isActive)]
    for timer, _ in active:
        timer.stop()
    if active:
        raise AssertionError(
            "the test left QTimers running after its widgets were closed and deleted:\n"
            + "\n".join(f"  started at {where}" for _, where in active)
        )


def _close_litellm_clients(loop: qasync.QEventLoop) -> None:
    """Close the HTTP clients litellm cached during the test, on the loop they were made on.

    litellm keeps one client per endpoint for the process; a test that called a loopback server
    left its connection open past its loop, and the socket's ResourceWarning surfaced at whatever
    later test's collection freed it (once, in test_live_run). The cache is emptied too, so the
    next test makes fresh clients on its own loop instead of finding closed ones.
    """
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return
    from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

    loop.run_until_complete(close_litellm_async_clients())
    litellm.in_memory_llm_clients_cache.flush_cache()


@pytest.fixture
def qloop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    qapp.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        yield loop
    finally:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        _close_litellm_clients(loop)
        # Qt objects the test dropped die here, at a known point, and not in the middle of a later
        # test when an allocation happens to trigger the cyclic garbage collector.
        gc.collect()
        loop.close()
        asyncio.set_event_loop(None)
    if errors:
        first = errors[0]
        exc = first.get("exception")
        if isinstance(exc, BaseException):
            raise exc
        raise AssertionError(f"event loop reported: {first.get('message')}")


def run(loop: qasync.QEventLoop, coro: Awaitable[T]) -> T:
    return loop.run_until_complete(coro)


async def wait_signal(signal: SignalInstance, timeout: float = HANG_S) -> tuple[Any, ...]:  # noqa: ASYNC109
    """Await one emission of a Qt signal (the async counterpart of qtbot.waitSignal)."""
    future: asyncio.Future[tuple[Any, ...]] = asyncio.get_running_loop().create_future()

    def fire(*args: Any) -> None:
        if not future.done():
            future.set_result(args)

    signal.connect(fire)
    try:
        return await asyncio.wait_for(future, timeout)
    finally:
        signal.disconnect(fire)


async def started(window: MainWindow) -> None:
    """Start the window and wait for its first queue refresh."""
    refreshed = wait_signal(window.model.sig_refreshed)
    window.start()
    await refreshed


async def select(window: MainWindow, task_id: str) -> None:
    """Select a task in the queue and wait until its dossier is on screen."""
    shown = wait_signal(window.sig_dossier_shown)
    assert window.queue.select_task(task_id)
    await shown


def verdict(status: str, score: float = 0.5, prompt: str = "Cite the tide tables.") -> str:
    return json.dumps(
        {
            "goal_achievement": "answers the question",
            "completeness": "complete",
            "rule_compliance": "no rules broken",
            "status": status,
            "score": score,
            "citations": [],
            "recommended_revision_prompt": prompt,
        }
    )


# Tasks whose text says REVIEWME end in needs_review; everything else is accepted.
DEFAULT_SCRIPT: list[dict[str, Any]] = [
    # SLOWTASK's calls wait at the workspace gateway's gate until the test releases "SLOWTASK".
    {"model": "agent", "match": "SLOWTASK", "turns": [{"content": "slow answer"}]},
    {"model": "agent", "match": "REVIEWME", "turns": [{"content": "answer needing review"}]},
    {"model": "agent", "turns": [{"content": "a plain answer"}, {"content": "a revised answer"}]},
    {
        "model": "validator",
        "match": "answer needing review",
        "turns": [{"content": verdict("insufficient_evidence", 0.3)}],
    },
    {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
]


@pytest.fixture
def desk_settings(tmp_path: Path, sqlite_url: str) -> Settings:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"conversations": DEFAULT_SCRIPT}), encoding="utf-8")
    return load_settings(script=script, db_url=sqlite_url)


@pytest.fixture
def workspace(qloop: qasync.QEventLoop, desk_settings: Settings) -> Iterator[Workspace]:
    ws = run(qloop, Workspace.open(desk_settings, gateway=GatedGateway(desk_settings, "SLOWTASK")))
    yield ws
    run(qloop, ws.close())


def gates(ws: Workspace) -> GatedGateway:
    """The workspace's gateway, whose SLOWTASK calls wait until ``gates(ws).release("SLOWTASK")``."""
    assert isinstance(ws.gateway, GatedGateway)
    return ws.gateway


@pytest.fixture
def ui_state(tmp_path: Path) -> QSettings:
    """Window geometry goes to a throw-away file, never the user's real settings."""
    return QSettings(str(tmp_path / "desk-ui.ini"), QSettings.Format.IniFormat)


def quiet_desk(window: MainWindow) -> Awaitable[None]:
    """Stop a desk's timers and work before its workspace closes: a claim's or presence's renewal
    left running would query a closed workspace, whose engine opens a new connection, and a test's
    dropped database then cuts that connection mid-handshake.

    The timers stop at the call, before any loop runs: ``run(qloop, quiet_desk(window))`` would
    otherwise let the loop delete a closed window's timers first. The rest is awaited."""
    window.claims.stop()
    window.team.presence.stop()
    return _drain_desk(window)


async def _drain_desk(window: MainWindow) -> None:
    await window.ops.wait_idle()
    await window.live.close()
    window.services.bridge.close()


async def add_task(
    ws: Workspace, text: str, status: TaskStatus = TaskStatus.OPEN, **fields: Any
) -> TaskRecord:
    """A task placed straight into ``status`` (test set-up only; the desk never does this)."""
    task = await TaskService(ws).create(text)
    if status is TaskStatus.OPEN and not fields:
        return task
    return await ws.store.update_task(task.id, status=status, **fields)


@pytest.fixture
def desk(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, ui_state: QSettings
) -> Iterator[MainWindow]:
    """A shown desk on the test workspace; its renewals, work in flight and watcher end with it.

    Tests whose tasks may still be running at the end (test_main_window, test_live_run) keep
    their own fixture that cancels them too.
    """
    from desktop.services import DeskServices
    from desktop.views.window.main_window import MainWindow

    services = DeskServices.for_workspace(workspace)
    window = MainWindow(services, ui_state=ui_state)
    qtbot.addWidget(window)
    window.show()
    yield window
    run(qloop, quiet_desk(window))
