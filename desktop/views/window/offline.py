"""While the team workspace's database is away: say so, and hold back what would need it.

Core's watcher announces ``WorkspaceConnection`` (offline when its LISTEN connection ends, or
when a SQLite workspace's file can no longer be reached; online once it listens or reads again). Offline, the status bar says "workspace offline — reconnecting"
and the actions that write to the workspace are disabled with that reason in their tool tip, so
a click cannot fail half-way. Online again, the queue and the task on screen are reloaded once:
the notices of other desks' and workers' writes made meanwhile never arrived.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QStatusBar

from core.events import WorkspaceConnection
from desktop.widgets.plain import plain_label

OFFLINE_TEXT = "workspace offline — reconnecting"


class OfflineGuard:
    """Shows the offline state in ``bar`` and keeps ``actions`` disabled while it lasts."""

    def __init__(self, bar: QStatusBar, actions: Sequence[QAction], on_back: Callable[[], None]) -> None:
        self._actions = list(actions)
        self._on_back = on_back
        self._tips: dict[QAction, str] = {}
        self.offline = False
        self.label = plain_label(OFFLINE_TEXT)
        self.label.setObjectName("WorkspaceOffline")
        self.label.setStyleSheet("QLabel { color: #922b21; font-weight: bold; padding: 0 6px; }")
        self.label.setVisible(False)
        bar.addWidget(self.label)

    def on_connection(self, event: WorkspaceConnection) -> None:
        if event.online == (not self.offline):
            return
        self.offline = not event.online
        self.label.setVisible(self.offline)
        if self.offline:
            self.hold()
            return
        for action, tip in self._tips.items():
            action.setToolTip(tip)
        self._tips.clear()
        self._on_back()  # re-enables by the task's own rules, and reloads the queue and the task

    def hold(self) -> None:
        """Disable the actions (again: a task change re-enables them by its rules) while offline."""
        if not self.offline:
            return
        for action in self._actions:
            self._tips.setdefault(action, action.toolTip())
            action.setEnabled(False)
            action.setToolTip(f"{OFFLINE_TEXT}: {self._tips[action]}" if self._tips[action] else OFFLINE_TEXT)


__all__ = ["OFFLINE_TEXT", "OfflineGuard"]
