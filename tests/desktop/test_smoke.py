from __future__ import annotations

import asyncio
import socket

import qasync
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from core.domain import TaskStatus
from desktop import entry
from desktop.app import DeskLauncher
from tests.desktop.conftest import run, wait_until


def test_entry_routes_desk_and_cli(monkeypatch: object) -> None:
    calls: list[tuple[str, list[str]]] = []
    import desktop.app

    mp = monkeypatch  # type: ignore[assignment]
    mp.setattr(desktop.app, "run_desk", lambda args: calls.append(("desk", args)) or 0)  # type: ignore[attr-defined]
    mp.setattr("core.cli.main.main", lambda args: calls.append(("cli", args)) or 0)  # type: ignore[attr-defined]
    assert entry.main([]) == 0
    assert entry.main(["--db", "sqlite:///x"]) == 0
    assert entry.main(["list"]) == 0
    assert calls == [("desk", []), ("desk", ["--db", "sqlite:///x"]), ("cli", ["list"])]


def test_launcher_opens_recovers_and_shows_queue(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, ui_state: QSettings
) -> None:
    launcher = DeskLauncher(sqlite_url, ui_state=ui_state)

    async def scenario() -> None:
        from core.store import Store

        store = await Store.open(sqlite_url)
        task = await store.create_task("left running by a crashed desk")
        session = await store.create_session(task_id=task.id, kind="main")
        gone = await asyncio.create_subprocess_exec("true")
        await gone.wait()  # a process of this host that has ended: its runs are provably orphaned
        await store.update_task(
            task.id,
            status=TaskStatus.RUNNING,
            main_session_id=session.id,
            runner=f"{socket.gethostname()}:{gone.pid}",
        )
        await store.close()
        window = await launcher.open()
        qtbot.addWidget(window)
        window.show()
        await wait_until(lambda: window.model.loaded_once, what="the queue")
        assert window.model.group_count("failed") == 1  # no usable answer: recovered to failed
        assert window.model.group_count("active") == 0
        assert "interrupted" in window.message_bar.label.text()
        await launcher.close()

    run(qloop, scenario())
