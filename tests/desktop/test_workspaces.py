"""Issue 30 item 10 and issue 31's ``--db``: the demo opens as its own workspace, File offers open /
demo / recent workspaces, switching replaces the window cleanly, and a named workspace that does
not exist is asked about rather than created silently."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from core.store import Store
from core.workspace import Workspace, demo_db_url
from desktop.app import DeskLauncher
from desktop.views.window.workspaces import (
    MissingWorkspaceDialog,
    recent_workspaces,
    remember_workspace,
    resolve_named_workspace,
)
from tests.desktop.conftest import run, wait_until


@pytest.fixture(autouse=True)
def _no_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No settings file, no EVIDENCE_DESK_* variables: the desk as a new analyst starts it."""
    for key in list(os.environ):
        if key.startswith("EVIDENCE_DESK_") or key.endswith("_API_BASE") or key == "OPENAI_API_KEY":
            monkeypatch.delenv(key)
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(tmp_path / "config" / "config.toml"))


def _path(url: str) -> Path:
    return Path(url.split("///", 1)[1])


def test_the_demo_opens_as_its_own_workspace_and_switching_back_is_clean(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, ui_state: QSettings
) -> None:
    async def small_demo(ws: Workspace) -> None:  # the real demo's runs are tests/integration/test_demo.py's
        for n in range(3):
            await ws.store.create_task(f"demo question {n}", title=f"Demo {n}")

    launcher = DeskLauncher(sqlite_url, ui_state=ui_state, demo_builder=small_demo)
    mine, demo = _path(sqlite_url), _path(demo_db_url(sqlite_url))

    async def scenario() -> None:
        store = await Store.open(sqlite_url)
        await store.create_task("the analyst's own question", title="Mine")
        await store.close()
        first = await launcher.open()  # not qtbot's: switching deletes it
        first.show()
        gone: list[str] = []
        first.destroyed.connect(lambda: gone.append("first"))
        await wait_until(lambda: first.model.total_count == 1, what="the analyst's queue")
        assert str(mine) in first.windowTitle() and "demo workspace" not in first.windowTitle()
        file_menu = first.menu("&File")
        names = [a.text() for a in file_menu.actions()]
        assert {"Open workspace…", "Open demo workspace", "Recent workspaces"} <= set(names), names
        assert first.workspaces.open_action.isEnabled() and first.workspaces.demo_action.isEnabled()
        old_services = first.services

        first.load_demo()  # the empty state's and the first-run banner's button
        await wait_until(lambda: launcher.window is not first, what="the demo's window")
        demo_window = launcher.window
        demo_window.destroyed.connect(lambda: gone.append("demo"))
        await wait_until(lambda: demo_window.model.total_count == 3, what="the demo's tasks")
        assert f"demo workspace {demo}" in demo_window.windowTitle()
        await wait_until(lambda: gone == ["first"], what="the old window to be deleted")
        assert old_services is not launcher.services and old_services.ops.pending == 0
        analyst = await Store.open(sqlite_url)  # nothing of the demo in the analyst's workspace
        assert [t.title for t in await analyst.list_tasks()] == ["Mine"]
        await analyst.close()
        assert recent_workspaces(ui_state)[:2] == [str(demo), str(mine)]
        assert demo_window.workspaces.recent_entries() == [str(mine)]

        back = await launcher.switch(str(mine))  # File → Recent workspaces → the analyst's
        qtbot.addWidget(back)
        await wait_until(lambda: back.model.total_count == 1, what="the analyst's queue again")
        assert f"workspace {mine}" in back.windowTitle() and "demo workspace" not in back.windowTitle()
        await wait_until(lambda: gone == ["first", "demo"], what="the demo's window to be deleted")
        await launcher.close()

    run(qloop, scenario())


def test_a_window_built_alone_offers_no_switch_and_keeps_the_demo_out(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, ui_state: QSettings, tmp_path: Path
) -> None:
    from core.config import load_settings
    from desktop.services import DeskServices
    from desktop.views.window.main_window import MainWindow

    async def scenario() -> None:
        ws = await Workspace.open(load_settings(db_url=sqlite_url))
        window = MainWindow(DeskServices.for_workspace(ws), ui_state=ui_state)
        qtbot.addWidget(window)
        assert not window.workspaces.open_action.isEnabled()
        window.load_demo()
        assert "own workspace" in window.message_bar.label.text()
        assert await ws.store.list_tasks() == []
        window.close()
        await ws.close()

    run(qloop, scenario())


def test_recent_workspaces_keep_paths_and_never_a_password(tmp_path: Path) -> None:
    state = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    for n in range(10):
        remember_workspace(state, str(tmp_path / f"w{n}.sqlite3"))
    remember_workspace(state, str(tmp_path / "w3.sqlite3"))
    remember_workspace(state, "postgresql://analyst:s3cret@db.example/ws")
    remember_workspace(state, "postgresql://analyst@db.example/ws")
    kept = recent_workspaces(state)
    assert kept[0] == "postgresql+asyncpg://analyst@db.example/ws"
    assert kept[1] == str(tmp_path / "w3.sqlite3") and len(kept) == 8
    assert not any("s3cret" in k for k in kept)
    assert "s3cret" not in (tmp_path / "ui.ini").read_text()


def test_a_named_workspace_that_does_not_exist_is_asked_about(tmp_path: Path) -> None:
    typo, other = tmp_path / "worksapce.sqlite3", tmp_path / "real.sqlite3"
    other.write_bytes(b"")
    asked: list[Path] = []

    def answering(*answers: str):  # type: ignore[no-untyped-def]
        queue = list(answers)

        def ask(path: Path) -> str:
            asked.append(path)
            return queue.pop(0)

        return ask

    def chooses(path: Path) -> str | None:
        return str(other)

    assert resolve_named_workspace(None, answering(), chooses) == (None, True)  # the default: no question
    assert asked == []
    assert resolve_named_workspace(str(typo), answering("quit"), chooses) == (None, False)
    assert resolve_named_workspace(str(typo), answering("create"), chooses) == (str(typo), True)
    assert resolve_named_workspace(str(typo), answering("choose"), chooses) == (str(other), True)
    assert asked == [typo, typo, typo] and not typo.exists()  # asking never creates anything
    assert resolve_named_workspace(str(other), answering(), chooses) == (str(other), True)


def test_the_missing_workspace_dialog_offers_create_choose_and_quit(qtbot: QtBot, tmp_path: Path) -> None:
    dialog = MissingWorkspaceDialog(tmp_path / "typo.sqlite3")
    qtbot.addWidget(dialog)
    assert str(tmp_path / "typo.sqlite3") in dialog.text()
    assert [b.text() for b in dialog.buttons()] and dialog.defaultButton() is dialog.choose_button
    for button, choice in (
        (dialog.create_button, "create"),
        (dialog.choose_button, "choose"),
        (dialog.quit_button, "quit"),
    ):
        dialog.open()
        button.click()
        assert dialog.choice() == choice
