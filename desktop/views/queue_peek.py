"""The boot window's read-only queue: counts and newest tasks, shown before the workspace opens.

Painted from ``core.queue_peek`` (the standard library's sqlite3, no store), so the analyst
sees the queue within the first few hundred milliseconds while the desk imports the rest; the
main window's live queue replaces it. Labels repeat ``desktop.presentation``'s group titles
(a test keeps them equal) because importing that module pulls in the whole domain package.
"""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from core.queue_peek import PeekGroup

PEEK_TITLES: dict[str, str] = {
    "needs_review": "Needs review",
    "awaiting_feedback": "Awaiting feedback",
    "needs_revision": "Needs revision",
    "active": "Running and validating",
    "open": "Open",
    "failed": "Failed",
    "closed": "Closed",
    "abandoned": "Abandoned",
}


class QueuePeekView(QTreeWidget):
    """Group headers with stored counts, each followed by its newest tasks; nothing to act on."""

    def __init__(self, groups: tuple[PeekGroup, ...]) -> None:
        super().__init__()
        self.setObjectName("queuePeek")
        self.setColumnCount(2)
        self.setHeaderLabels(["Task", "Updated"])
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setToolTip("Opening the workspace… (read-only preview of the queue)")
        bold = QFont(self.font())
        bold.setBold(True)
        self.shown_rows = 0
        for group in groups:
            header = QTreeWidgetItem([f"{PEEK_TITLES.get(group.key, group.key)} ({group.count:,})", ""])
            header.setFont(0, bold)
            self.addTopLevelItem(header)
            for row in group.rows:
                header.addChild(QTreeWidgetItem([row.title, row.updated_at[:16]]))
            self.shown_rows += len(group.rows)
            header.setFirstColumnSpanned(True)
        self.expandAll()
        self.setColumnWidth(0, 700)


__all__ = ["PEEK_TITLES", "QueuePeekView"]
