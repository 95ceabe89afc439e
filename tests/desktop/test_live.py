"""Live desks: another process's writes appear in the queue by themselves, with no input."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from core.config import Settings
from core.domain import TaskStatus
from core.domain.records import TaskRecord
from core.store.engine import sqlite_path
from core.workspace import Workspace
from desktop.presentation import GROUPS
from desktop.services import DeskServices
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, quiet_desk, run, wait_signal, wait_until

ROOT = Path(__file__).resolve().parents[2]
APPEAR_S = 2.0  # the bound: another process's change is on screen within 2 s


@pytest.fixture
def live_desk(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, ui_state: QSettings
) -> Iterator[MainWindow]:
    services = DeskServices.for_workspace(workspace)
    window = MainWindow(services, ui_state=ui_state)
    qtbot.addWidget(window)
    window.show()
    yield window
    run(qloop, services.ops.wait_idle())
    run(qloop, window.live.close())
    services.bridge.close()


async def go_live(window: MainWindow) -> None:
    refreshed = wait_signal(window.model.sig_refreshed)
    window.start()
    await refreshed
    await wait_until(lambda: window.live.watching, what="the watcher to start")


def test_a_task_run_by_the_command_line_appears_without_any_input(
    qloop: qasync.QEventLoop, live_desk: MainWindow, desk_settings: Settings
) -> None:
    db = sqlite_path(desk_settings.db_url)
    assert db is not None and desk_settings.script is not None

    async def scenario() -> None:
        existing = await add_task(live_desk.workspace, "already here REVIEWME", TaskStatus.NEEDS_REVIEW)
        await go_live(live_desk)
        assert live_desk.queue.select_task(existing.id)
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "core.cli",
            "run",
            "Tides from the command line",
            "--title",
            "From the CLI",
            "--db",
            str(db),
            "--script",
            str(desk_settings.script),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _out, err = await child.communicate()
        assert child.returncode == 0, err.decode()

        # The child has finished writing; from here the desk has APPEAR_S to show it, untouched.
        def titles() -> dict[str, TaskStatus]:
            return {t.title: t.status for t in _listed(live_desk)}

        await wait_until(
            lambda: titles().get("From the CLI") is TaskStatus.AWAITING_FEEDBACK,
            timeout=APPEAR_S,
            what="the command line's task in the desk's queue",
        )
        assert live_desk.queue.selected_task_id == existing.id  # the analyst's place is kept

    run(qloop, scenario())


def _listed(window: MainWindow) -> list[TaskRecord]:
    """Every task row the queue holds, across its groups."""
    ids = [i for look in GROUPS for i in window.model.group_task_ids(look.key)]
    return [t for t in (window.model.task(i) for i in ids) if t is not None]


def test_two_desks_on_postgresql_see_each_others_decisions(
    qloop: qasync.QEventLoop, qtbot: QtBot, tmp_path: Path, pg_url: str, desk_settings: Settings
) -> None:
    settings = desk_settings.model_copy(update={"db_url": pg_url})
    first = run(qloop, Workspace.open(settings))
    second = run(qloop, Workspace.open(settings))  # its own engine: another desk's connections
    windows: list[MainWindow] = []
    for n, ws in enumerate((first, second)):
        ui = QSettings(str(tmp_path / f"desk-{n}.ini"), QSettings.Format.IniFormat)
        window = MainWindow(DeskServices.for_workspace(ws), ui_state=ui)
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
    one, two = windows

    async def scenario() -> None:
        task = await add_task(first, "decide me REVIEWME", TaskStatus.NEEDS_REVIEW)
        await go_live(one)
        await go_live(two)
        shown = wait_signal(one.sig_dossier_shown)
        assert one.queue.select_task(task.id)
        await shown
        one.satisfied()
        await wait_until(
            lambda: (listed := two.model.task(task.id)) is not None and listed.status is TaskStatus.CLOSED,
            timeout=APPEAR_S,
            what="desk one's decision in desk two",
        )
        made = await two.workspace.store.create_task("from desk two", title="Second desk's task")
        await wait_until(
            lambda: one.model.task(made.id) is not None, timeout=APPEAR_S, what="desk two's task in desk one"
        )

    try:
        run(qloop, scenario())
    finally:
        for window in windows:
            run(qloop, quiet_desk(window))
        run(qloop, first.close())
        run(qloop, second.close())
