"""The Assigned pane: "Assigned to me" and a queue per reviewer, from the claims in force.

A combo picks whose tasks to list (Everyone, Assigned to me, or any reviewer holding a claim);
the rows come from ``core.tasks.team_views`` over the claims table, so the list is exactly what
the command line's ``claims list --assigned-to-me`` would print. It is re-read when claims change
anywhere (``ReviewersChanged``, live from other desks) and after task changes. Activating a row
selects the task in the queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QComboBox

from core.tasks.team_views import AssignedTask, TeamViews
from desktop.presentation import STATUS_LABELS
from desktop.views.team.pane import TeamPane

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

HEADERS = ("Task", "Status", "Reviewer", "Until")
COL_TITLE, COL_STATUS, COL_REVIEWER, COL_UNTIL = range(4)
TASK_ID_ROLE = Qt.ItemDataRole.UserRole + 1
EVERYONE = ""
ME = "\x00me"  # the combo's data for "Assigned to me" (never a reviewer's name)


def _cell(row: AssignedTask, column: int, role: int) -> Any:
    if role == TASK_ID_ROLE:
        return row.task.id
    if role == Qt.ItemDataRole.ToolTipRole:
        return row.task.text[:600]
    if role != Qt.ItemDataRole.DisplayRole:
        return None
    return {
        COL_TITLE: row.task.title,
        COL_STATUS: STATUS_LABELS[row.task.status],
        COL_REVIEWER: row.reviewer,
        COL_UNTIL: row.expires_at.astimezone().strftime("%H:%M"),
    }.get(column)


class AssignedPane(TeamPane[AssignedTask]):
    """The dock; ``show_reviewer`` picks whose queue it lists."""

    def __init__(self, host: DeskHost) -> None:
        self.views = TeamViews(host.services.workspace.store)
        self.me = host.reviewer
        self.combo = QComboBox()
        super().__init__(host, "Assigned", HEADERS, _cell, self._read)
        self._others: list[str] = []  # reviewers holding claims, as last read
        self.combo.addItem("Everyone", EVERYONE)
        self.combo.addItem(f"Assigned to me ({self.me})", ME)
        self.combo.setCurrentIndex(1)
        self.combo.currentIndexChanged.connect(lambda _i: self.reload())
        self.body_layout.insertWidget(0, self.combo)
        self.table.activated.connect(self._activated)
        host.services.bridge.sig_reviewers_changed.connect(self.reload_soon)

    @property
    def reviewer(self) -> str | None:
        """Whose tasks are listed; None for everyone."""
        data = self.combo.currentData()
        return self.me if data == ME else (data or None)

    def show_reviewer(self, reviewer: str | None) -> None:
        """List ``reviewer``'s tasks (this desk's reviewer: "Assigned to me"; None: everyone)."""
        key = EVERYONE if reviewer is None else ME if reviewer == self.me else reviewer
        at = self.combo.findData(key)
        if at < 0:
            self.combo.addItem(str(reviewer), key)
            at = self.combo.count() - 1
        if at == self.combo.currentIndex():
            self.reload()
        else:
            self.combo.setCurrentIndex(at)

    async def _read(self) -> list[AssignedTask]:
        rows = await self.views.assigned(self.reviewer)
        self._others = await self.views.reviewers()
        return rows

    def shown(self, rows: list[AssignedTask]) -> None:
        known = {self.combo.itemData(i) for i in range(self.combo.count())}
        for name in self._others:
            if name != self.me and name not in known:
                self.combo.addItem(name, name)

    def _activated(self, index: QModelIndex) -> None:
        task_id = index.data(TASK_ID_ROLE)
        if isinstance(task_id, str) and not self._host.queue.select_task(task_id):
            self._host.show_info("That task is not in the queue as filtered.")


def install_assigned(host: DeskHost) -> AssignedPane:
    pane = AssignedPane(host)
    host.widget.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, pane)
    pane.hide()
    host.model.sig_refreshed.connect(pane.reload_soon)
    return pane


__all__ = ["AssignedPane", "install_assigned"]
