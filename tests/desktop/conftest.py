"""Desk test fixtures: one qasync loop per test, and small scripted workspaces.

pytest-qt owns the session's QApplication (``qapp``) but not an asyncio loop. Following qasync's
own tests, each test gets a fresh ``qasync.QEventLoop`` (``qloop``): scenarios run with
``qloop.run_until_complete(...)``, exceptions the loop reports are collected and re-raised at
teardown, and the loop is closed. Inside a running scenario, waits are awaited (``wait_signal``,
``wait_until``) rather than spun with ``qtbot.waitUntil``: a nested Qt event loop inside a
running coroutine would step other asyncio tasks re-entrantly.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import QSettings, SignalInstance
from PySide6.QtWidgets import QApplication

from core.config import Settings, load_settings
from core.domain import TaskStatus
from core.store import TaskRecord
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.gates import HANG_S, GatedGateway, wait_until

T = TypeVar("T")
__all__ = ["wait_until"]  # re-exported: the desk tests import their waits from here


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
def desk_settings(tmp_path: Path, db_url: str) -> Settings:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"conversations": DEFAULT_SCRIPT}), encoding="utf-8")
    return load_settings(script=script, db_url=db_url)


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


async def add_task(
    ws: Workspace, text: str, status: TaskStatus = TaskStatus.OPEN, **fields: Any
) -> TaskRecord:
    """A task placed straight into ``status`` (test set-up only; the desk never does this)."""
    task = await TaskService(ws).create(text)
    if status is TaskStatus.OPEN and not fields:
        return task
    return await ws.store.update_task(task.id, status=status, **fields)
