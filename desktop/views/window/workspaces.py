"""Which workspace the desk shows: File → Open workspace…, Open demo workspace, the recent ones,
and the question asked when a workspace named on purpose does not exist.

The demo is a workspace of its own (``demo.sqlite3`` beside the analyst's, ``core.workspace``):
loading it once filled the analyst's own queue, search and figures with sample tasks. Switching is
the launcher's work (``desktop.app``: the old window's watchers, claims and services are closed,
a new window opens on the new workspace); this module offers the choices and remembers them.

The recent list is kept in the desk's own ``QSettings`` as file paths, or as server URLs only when
they carry no password: nothing secret is written there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMenu, QMessageBox, QWidget

from core.workspace import demo_db_url, is_demo_workspace, shareable_name, workspace_file

__all__ = [
    "RECENT_KEPT",
    "MissingWorkspaceDialog",
    "WorkspaceMenu",
    "recent_workspaces",
    "remember_workspace",
    "resolve_named_workspace",
    "window_title",
]

RECENT_KEY = "workspaces/recent"
RECENT_KEPT = 8
WORKSPACE_FILES = "Workspaces (*.sqlite3 *.sqlite *.db);;All files (*)"

Switch = Callable[[str, bool], None]
"""Open this workspace (a path or URL); True: build the demo in it once it is open."""


def window_title(display_name: str, db_url: str) -> str:
    """The title names the workspace open, and says so when it is the demo's."""
    kind = "demo workspace" if is_demo_workspace(db_url) else "workspace"
    return f"Evidence Desk — {kind} {display_name}"


def _entry(db_url: str) -> str | None:
    """What the recent list keeps for ``db_url``: its file path, or the URL when it has no password."""
    return shareable_name(db_url)


def recent_workspaces(state: QSettings) -> list[str]:
    """The workspaces opened here, most recent first."""
    value = state.value(RECENT_KEY)
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in value if v] if isinstance(value, list) else []


def remember_workspace(state: QSettings, db_url: str) -> None:
    """Put ``db_url`` first in the recent list (never a URL with a password in it)."""
    entry = _entry(db_url)
    if entry is None:
        return
    kept = [entry, *(r for r in recent_workspaces(state) if r != entry)][:RECENT_KEPT]
    state.setValue(RECENT_KEY, kept)
    state.sync()


class WorkspaceMenu(QObject):
    """File → Open workspace…, Open demo workspace and Recent workspaces, for the window's workspace.

    The actions do nothing of their own until the launcher hands in how to switch
    (``connect_switch``): a window built alone (a test, the screenshot tool) shows them disabled.
    """

    def __init__(
        self, window: QMainWindow, file_menu: QMenu, before: QAction, state: QSettings, db_url: str
    ) -> None:
        super().__init__(window)
        self.window = window
        self.state = state
        self.db_url = db_url
        self._switch: Switch | None = None
        self.open_action = QAction("Open workspace…", window)
        self.open_action.setShortcut(QKeySequence("Ctrl+Shift+O"))
        self.open_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.open_action.setToolTip("Open another workspace file (Ctrl+Shift+O)")
        self.open_action.triggered.connect(lambda _checked=False: self.choose())
        window.addAction(self.open_action)
        self.demo_action = QAction("Open demo workspace", window)
        self.demo_action.setToolTip("The demo's sample tasks, in a workspace of their own")
        self.demo_action.triggered.connect(lambda _checked=False: self.open_demo())
        self.recent_menu = QMenu("Recent workspaces", window)
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        file_menu.insertAction(before, self.open_action)
        file_menu.insertAction(before, self.demo_action)
        file_menu.insertMenu(before, self.recent_menu)
        file_menu.insertSeparator(before)
        self.chooser: QFileDialog | None = None
        self._enable(False)

    # ------------------------------------------------------------------ wiring
    def connect_switch(self, switch: Switch) -> None:
        """The launcher's way to open another workspace; enables the actions."""
        self._switch = switch
        self._enable(True)

    @property
    def can_switch(self) -> bool:
        return self._switch is not None

    def _enable(self, on: bool) -> None:
        for act in (self.open_action, self.demo_action):
            act.setEnabled(on)
        self.recent_menu.setEnabled(on)

    # ------------------------------------------------------------------ the choices
    def open_workspace(self, target: str, *, build_demo: bool = False) -> None:
        if self._switch is not None:
            self._switch(target, build_demo)

    def open_demo(self) -> None:
        """The demo's own workspace beside this one, built there if it is new or empty."""
        self.open_workspace(demo_db_url(self.db_url), build_demo=True)

    def choose(self) -> None:
        """A file dialog for an existing workspace (a new one is made with ``--db PATH`` and a yes)."""
        current = workspace_file(self.db_url)
        chooser = QFileDialog(
            self.window, "Open workspace", str(current.parent) if current else "", WORKSPACE_FILES
        )
        chooser.setFileMode(QFileDialog.FileMode.ExistingFile)
        chooser.fileSelected.connect(lambda path: self.open_workspace(path))
        self.chooser = chooser
        chooser.open()  # not the static getOpenFileName: no nested event loop inside qasync

    def recent_entries(self) -> list[str]:
        """The recent workspaces the menu offers: this one left out."""
        here = _entry(self.db_url)
        return [r for r in recent_workspaces(self.state) if r != here]

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        entries = self.recent_entries()
        for entry in entries:
            label = f"{entry}  (demo)" if is_demo_workspace(entry) else entry
            act = self.recent_menu.addAction(label)
            act.triggered.connect(lambda _checked=False, e=entry: self.open_workspace(e))
        if not entries:
            none = self.recent_menu.addAction("No other workspace opened yet")
            none.setEnabled(False)


class MissingWorkspaceDialog(QMessageBox):
    """A workspace named on purpose (``--db PATH``) that does not exist: create it, choose another,
    or quit. A mistyped path used to become a new, empty workspace without a word."""

    CREATE, CHOOSE, QUIT = "create", "choose", "quit"

    def __init__(self, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setIcon(QMessageBox.Icon.Question)
        self.setWindowTitle("No workspace there")
        self.setTextFormat(Qt.TextFormat.PlainText)  # the path is the analyst's text
        self.setText(f"There is no workspace at\n{path}")
        self.setInformativeText("Create a new, empty workspace there, or open another one?")
        self.create_button = self.addButton("Create it", QMessageBox.ButtonRole.AcceptRole)
        self.choose_button = self.addButton("Choose another…", QMessageBox.ButtonRole.ActionRole)
        self.quit_button = self.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
        self.setDefaultButton(self.choose_button)  # Enter never creates a workspace by accident
        self.setEscapeButton(self.quit_button)

    def choice(self) -> str:
        """What the analyst pressed: ``CREATE``, ``CHOOSE`` or ``QUIT``."""
        clicked = self.clickedButton()
        if clicked is self.create_button:
            return self.CREATE
        if clicked is self.choose_button:
            return self.CHOOSE
        return self.QUIT


Ask = Callable[[Path], str]
"""Asks about a missing workspace file: ``"create"``, ``"choose"`` or ``"quit"``."""

Choose = Callable[[Path], str | None]
"""Lets the analyst pick an existing workspace (a path), or None when they cancel."""


def resolve_named_workspace(db_url: str | None, ask: Ask, choose: Choose) -> tuple[str | None, bool]:
    """``(the workspace to open, go on)`` for a ``--db`` the analyst named.

    No ``--db``: the default workspace, created silently on a first run, as ``make run`` expects.
    A named file that exists, or a server URL: opened as it is. A named file that does not exist:
    ``ask`` decides (create it, choose another, or quit); a chosen file that turns out missing too
    is asked about again.
    """
    from core.workspace import missing_workspace

    target = db_url
    while target is not None:
        missing = missing_workspace(target)
        if missing is None:
            return target, True
        answer = ask(missing)
        if answer == MissingWorkspaceDialog.CREATE:
            return target, True
        if answer != MissingWorkspaceDialog.CHOOSE:
            return None, False
        chosen = choose(missing)
        if chosen:
            target = chosen
    return None, True


def ask_at_start(path: Path) -> str:
    """``Ask`` for the desk's start: a modal dialog, run before the asyncio loop starts (so its
    nested event loop steps no coroutine)."""
    dialog = MissingWorkspaceDialog(path)
    dialog.exec()
    return dialog.choice()


def choose_at_start(path: Path) -> str | None:
    """``Choose`` for the desk's start: an existing workspace file, before the asyncio loop starts."""
    chosen, _filter = QFileDialog.getOpenFileName(None, "Open workspace", str(path.parent), WORKSPACE_FILES)
    return chosen or None
