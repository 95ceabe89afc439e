"""The boot window holds the live queue, seeded from SQLite before the store opens, and the main
window takes it over: rows, order, selection and a filter typed meanwhile all carry across."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from core.domain.queue import SortColumn
from core.domain.status import TaskStatus
from core.errors import EvidenceDeskError
from core.store import Store
from desktop.app import DeskLauncher, boot_window, queue_rows_shown
from desktop.models.queue_model import COL_SCORE, COL_TITLE, FIRST_PAGE, PendingQueue, TaskQueueModel
from desktop.ops import CoreOps
from desktop.views.queue.view import QueueView
from tests.desktop.conftest import run, wait_signal
from tests.gates import wait_until


async def _tasks(url: str, spec: list[tuple[str, TaskStatus]]) -> list[str]:
    store = await Store.open(url)
    try:
        ids = []
        for title, status in spec:
            task = await store.create_task(f"question about {title}", title=title)
            await store.update_task(task.id, status=status)
            ids.append(task.id)
        return ids
    finally:
        await store.close()


async def _set_status(url: str, task_id: str, status: TaskStatus) -> None:
    store = await Store.open(url)
    try:
        await store.update_task(task_id, status=status)
    finally:
        await store.close()


SPEC = [
    ("Harbour tides", TaskStatus.NEEDS_REVIEW),
    ("Beacon lights", TaskStatus.NEEDS_REVIEW),
    ("Anchor chains", TaskStatus.NEEDS_REVIEW),
    ("Harbour dues", TaskStatus.CLOSED),
    ("Pilot boats", TaskStatus.CLOSED),
]


def _state(tmp_path: Path) -> QSettings:
    return QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)


def _save_header(
    loop: qasync.QEventLoop,
    qtbot: QtBot,
    state: QSettings,
    column: int | None = None,
    order: Qt.SortOrder = Qt.SortOrder.AscendingOrder,
) -> None:
    """The queue header a closed desk left in ``state``, sorted by ``column`` if given."""
    ops = CoreOps()
    earlier = QueueView(TaskQueueModel(PendingQueue(), ops))
    qtbot.addWidget(earlier)
    if column is not None:
        earlier.tree.header().setSortIndicator(column, order)
    state.setValue("queue/header", earlier.tree.header().saveState())
    ops.cancel_all()  # its sort's reload waits for a store this view never gets
    run(loop, ops.wait_idle())


def test_the_boot_window_holds_the_live_queue_in_the_saved_order(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, tmp_path: Path
) -> None:
    run(qloop, _tasks(sqlite_url, SPEC))
    state = _state(tmp_path)
    # The analyst last sorted by title, A to Z: the header keeps it, and the seed reads in it.
    _save_header(qloop, qtbot, state, COL_TITLE, Qt.SortOrder.AscendingOrder)

    boot = boot_window(state, sqlite_url)
    qtbot.addWidget(boot)
    assert boot.queue is not None
    model = boot.queue.model
    assert model.loaded_once and queue_rows_shown(boot) == 5
    assert model.group_count("needs_review") == 3 and model.group_count("closed") == 2
    titles = [model.task(t).title for t in model.group_task_ids("needs_review")]  # type: ignore[union-attr]
    assert titles == ["Anchor chains", "Beacon lights", "Harbour tides"]
    assert boot.focusWidget() is boot.queue.view.tree  # arrow keys move through it at once


def test_the_main_window_takes_the_queue_over_with_the_analysts_selection(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, tmp_path: Path
) -> None:
    ids = run(qloop, _tasks(sqlite_url, SPEC))
    state = _state(tmp_path)
    boot = boot_window(state, sqlite_url)
    qtbot.addWidget(boot)
    assert boot.queue is not None
    view, model = boot.queue.view, boot.queue.model
    assert view.select_task(ids[1])  # the analyst moves before the store is open
    # Meanwhile another desk sends a closed task back to review: the store's first reload shows it.
    run(qloop, _set_status(sqlite_url, ids[4], TaskStatus.NEEDS_REVIEW))
    launcher = DeskLauncher(sqlite_url, ui_state=state)

    async def scenario() -> None:
        window = await launcher.open(boot.queue)
        qtbot.addWidget(window)
        shown = wait_signal(window.sig_dossier_shown)
        window.show()
        boot.close()
        assert window.queue is view and window.model is model
        assert await shown == (ids[1],)  # its dossier opens without a second selection
        await wait_until(lambda: window.first_fill.filled, what="the store's first reload")
        assert view.selected_task_id == ids[1]
        assert model.group_count("needs_review") == 4 and model.group_count("closed") == 1
        assert ids[4] in model.group_task_ids("needs_review")
        await wait_until(lambda: window.first_fill.pending == 0 and window.first_fill.ran > 0)
        assert hasattr(window, "search_panel")  # deferred start-up still ran after the reload
        window.close()
        await launcher.close()

    run(qloop, scenario())


def test_a_filter_typed_before_the_store_opens_applies_once_it_does(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, tmp_path: Path
) -> None:
    run(qloop, _tasks(sqlite_url, SPEC))
    state = _state(tmp_path)
    boot = boot_window(state, sqlite_url)
    qtbot.addWidget(boot)
    assert boot.queue is not None
    view, model = boot.queue.view, boot.queue.model
    view.filter_edit.setText("Harbour")
    view.apply_filter()
    run(qloop, asyncio.sleep(0))
    assert model.reloading and model.loaded_rows() == 5  # waiting for the store, seed still shown
    launcher = DeskLauncher(sqlite_url, ui_state=state)

    async def scenario() -> None:
        window = await launcher.open(boot.queue)
        qtbot.addWidget(window)
        await wait_until(lambda: window.first_fill.filled and not model.reloading, what="the reload")
        titles = sorted(
            model.task(t).title for g in ("needs_review", "closed") for t in model.group_task_ids(g)
        )  # type: ignore[union-attr]
        assert titles == ["Harbour dues", "Harbour tides"]
        window.close()
        await launcher.close()

    run(qloop, scenario())


def test_no_workspace_yet_or_not_sqlite_means_a_label_and_no_file(
    qloop: qasync.QEventLoop, qtbot: QtBot, tmp_path: Path
) -> None:
    for url in (
        f"sqlite+aiosqlite:///{tmp_path / 'new.sqlite3'}",
        "postgresql+psycopg://desk@127.0.0.1:1/ws",
    ):
        boot = boot_window(_state(tmp_path), url)
        qtbot.addWidget(boot)
        assert boot.queue is None and isinstance(boot.centralWidget(), QLabel)
        assert queue_rows_shown(boot) == 0
    assert not (tmp_path / "new.sqlite3").exists()


def test_a_full_first_page_and_a_sort_chosen_in_the_boot_window_survive_the_handover(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, tmp_path: Path
) -> None:
    """The seed reads the rows the reload reads; the saved header does not undo the analyst's sort."""
    run(
        qloop,
        _tasks(sqlite_url, [(f"Review {i:02d}", TaskStatus.NEEDS_REVIEW) for i in range(FIRST_PAGE + 7)]),
    )
    state = _state(tmp_path)
    _save_header(qloop, qtbot, state)  # a desk closed before, in the default sort
    boot = boot_window(state, sqlite_url)
    qtbot.addWidget(boot)
    assert boot.queue is not None
    view, model = boot.queue.view, boot.queue.model
    seeded = model.group_task_ids("needs_review")
    assert len(seeded) == model.first_page_size and model.has_more(0)
    launcher = DeskLauncher(sqlite_url, ui_state=state)

    async def scenario() -> None:
        window = await launcher.open(boot.queue)
        qtbot.addWidget(window)
        await wait_until(lambda: window.first_fill.filled and not model.reloading, what="the reload")
        assert model.group_task_ids("needs_review") == seeded  # nothing appeared or vanished
        window.close()
        await launcher.close()

    run(qloop, scenario())

    boot = boot_window(state, sqlite_url)  # the next start: the analyst sorts by title at once
    qtbot.addWidget(boot)
    assert boot.queue is not None
    view, model = boot.queue.view, boot.queue.model
    view.tree.header().setSortIndicator(COL_TITLE, Qt.SortOrder.AscendingOrder)
    launcher = DeskLauncher(sqlite_url, ui_state=state)

    async def sorted_meanwhile() -> None:
        window = await launcher.open(boot.queue)
        qtbot.addWidget(window)
        await wait_until(lambda: window.first_fill.filled and not model.reloading, what="the reload")
        assert model.sort_order.column is SortColumn.TITLE and not model.sort_order.descending
        titles = [model.task(t).title for t in model.group_task_ids("needs_review")]  # type: ignore[union-attr]
        assert titles == sorted(titles)
        window.close()
        await launcher.close()

    run(qloop, sorted_meanwhile())


def test_a_row_the_store_would_not_hand_over_means_the_label_not_a_crash(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ids = run(qloop, _tasks(sqlite_url, SPEC))
    path = sqlite_url.removeprefix("sqlite+aiosqlite:///")
    with sqlite3.connect(path) as conn:  # a value a newer build might write
        conn.execute("UPDATE tasks SET revision_requested_by = 'auditor' WHERE id = ?", (ids[0],))
    conn.close()
    state = _state(tmp_path)
    _save_header(qloop, qtbot, state, COL_SCORE, Qt.SortOrder.AscendingOrder)  # restoring it asks a reload
    boot = boot_window(state, sqlite_url)
    qtbot.addWidget(boot)
    assert boot.queue is None and isinstance(boot.centralWidget(), QLabel)
    assert "could not be shown" in caplog.text
    run(qloop, asyncio.sleep(0))  # the half-built queue's reload was cancelled, not left waiting
    assert not [t for t in asyncio.all_tasks(qloop) if "refresh" in repr(t.get_coro())]


def test_a_workspace_that_fails_to_open_leaves_no_read_waiting(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(qloop, _tasks(sqlite_url, SPEC))
    boot = boot_window(_state(tmp_path), sqlite_url)
    qtbot.addWidget(boot)
    assert boot.queue is not None
    boot.queue.view.filter_edit.setText("Harbour")
    boot.queue.view.apply_filter()  # waits for the store
    assert boot.queue.ops.pending == 1
    broken = tmp_path / "config.toml"
    broken.write_text("db_url = [broken\n", encoding="utf-8")
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(broken))
    launcher = DeskLauncher(sqlite_url, ui_state=_state(tmp_path))

    async def scenario() -> None:
        with pytest.raises(EvidenceDeskError, match="configuration file"):
            await launcher.open(boot.queue)
        await launcher.close()
        assert boot.queue is not None and boot.queue.ops.pending == 0

    run(qloop, scenario())


def test_garbage_saved_layout_still_seeds_the_queue_in_the_default_order(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, tmp_path: Path
) -> None:
    """A settings file damaged by hand or by another version: defaults, never a crash or no queue."""
    run(qloop, _tasks(sqlite_url, SPEC))
    state = _state(tmp_path)
    for key in ("window/geometry", "window/splitter", "queue/header"):
        state.setValue(key, QByteArray(b"\x00not a Qt state\xff" * 4))
    boot = boot_window(state, sqlite_url)
    qtbot.addWidget(boot)
    assert boot.queue is not None and queue_rows_shown(boot) == 5
    assert boot.queue.model.sort_order.column is SortColumn.UPDATED_AT
    assert boot.width() == 1400 and boot.height() == 860
