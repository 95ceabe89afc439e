"""The Schedules pane: recurring tasks with their next run, last firing and last verdict.

Everything shown is computed by ``core.tasks.team_views`` for one "now" (the pane's ``clock``,
which tests fix), including the next cron match, so the desk parses no cron expression. Rows
are read again after task changes are announced (each firing changes its task), so a firing's
verdict appears live. Activating a schedule selects its task in the queue.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from core.tasks.claims import utc_now
from core.tasks.team_views import ScheduleView, TeamViews
from desktop.views.team.pane import TeamPane

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

HEADERS = ("Schedule", "Runs", "Next run", "Last run", "Last verdict", "State")
COL_TITLE, COL_EVERY, COL_NEXT, COL_LAST, COL_VERDICT, COL_STATE = range(6)
TASK_ID_ROLE = Qt.ItemDataRole.UserRole + 1
_DUE = QBrush(QColor("#b35c00"))


def _when(at: datetime | None) -> str:
    return at.astimezone().strftime("%Y-%m-%d %H:%M") if at is not None else "never"


def _cell(sc: ScheduleView, column: int, role: int) -> Any:
    if role == TASK_ID_ROLE:
        return sc.task_id
    if role == Qt.ItemDataRole.ForegroundRole and column == COL_NEXT and sc.due:
        return _DUE
    if role == Qt.ItemDataRole.ToolTipRole:
        check = "every answer validated" if sc.verify_heartbeat else "heartbeat answers not validated"
        return f"{sc.title}\n{sc.every}; {check}\nschedule {sc.schedule_id[:8]}"
    if role != Qt.ItemDataRole.DisplayRole:
        return None
    return {
        COL_TITLE: sc.title,
        COL_EVERY: sc.every,
        COL_NEXT: ("due now, then " if sc.due else "") + _when(sc.next_run),
        COL_LAST: _when(sc.last_run),
        COL_VERDICT: sc.last_verdict or "—",
        COL_STATE: ("enabled" if sc.enabled else "stopped") + (" · verify" if sc.verify_heartbeat else ""),
    }.get(column)


class SchedulesPane(TeamPane[ScheduleView]):
    """The dock; ``clock`` is the "now" the next runs are computed for."""

    def __init__(self, host: DeskHost) -> None:
        self.clock: Callable[[], datetime] = utc_now
        super().__init__(
            host,
            "Schedules",
            HEADERS,
            _cell,
            lambda: TeamViews(
                host.services.workspace.store,
                clock=self.clock,
                cron_timezone=host.services.workspace.settings.cron_timezone,
            ).schedules(),
        )
        self.table.activated.connect(self._activated)

    def _activated(self, index: QModelIndex) -> None:
        task_id = index.data(TASK_ID_ROLE)
        if isinstance(task_id, str) and not self._host.queue.select_task(task_id):
            self._host.show_info("The schedule's task is not in the queue as filtered.")

    def shown(self, rows: list[ScheduleView]) -> None:
        if rows and not self.isVisible() and not self.property("shown_once"):
            self.setProperty("shown_once", True)
            self.show()


def install_schedules(host: DeskHost) -> SchedulesPane:
    pane = SchedulesPane(host)
    host.widget.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, pane)
    pane.hide()
    host.model.sig_refreshed.connect(pane.reload_soon)
    return pane


__all__ = ["SchedulesPane", "install_schedules"]
