"""The boot window paints the queue's first rows before the workspace opens, or says it is opening."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from core.domain.status import TaskStatus
from core.store import Store
from desktop.app import boot_window, peek_rows_shown
from desktop.presentation import GROUPS
from desktop.views.queue_peek import PEEK_TITLES, QueuePeekView


def test_peek_titles_are_the_desks_group_titles() -> None:
    assert {look.group.key: look.title for look in GROUPS} == PEEK_TITLES


def test_boot_window_shows_the_queue_read_straight_from_sqlite(
    qtbot: QtBot, sqlite_url: str, tmp_path: Path
) -> None:
    async def build() -> None:
        store = await Store.open(sqlite_url)
        try:
            for i, status in enumerate((TaskStatus.NEEDS_REVIEW, TaskStatus.CLOSED, TaskStatus.CLOSED)):
                task = await store.create_task(f"question {i}", title=f"Harbour task {i}")
                await store.update_task(task.id, status=status)
        finally:
            await store.close()

    asyncio.run(build())
    state = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    boot = boot_window(state, sqlite_url)
    qtbot.addWidget(boot)
    view = boot.centralWidget()
    assert isinstance(view, QueuePeekView)
    assert peek_rows_shown(boot) == 3
    headers = [view.topLevelItem(i).text(0) for i in range(view.topLevelItemCount())]
    assert headers[0] == "Needs review (1)" and "Closed (2)" in headers
    assert view.topLevelItem(0).child(0).text(0) == "Harbour task 0"


def test_boot_window_without_a_workspace_says_it_is_opening(qtbot: QtBot, tmp_path: Path) -> None:
    state = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    url = f"sqlite+aiosqlite:///{tmp_path / 'new.sqlite3'}"
    boot = boot_window(state, url)
    qtbot.addWidget(boot)
    assert isinstance(boot.centralWidget(), QLabel)
    assert peek_rows_shown(boot) == 0
    assert not (tmp_path / "new.sqlite3").exists()
