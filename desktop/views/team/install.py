"""The team features on the desk with one call: batches, schedules, assigned, presence.

The window installs them after the queue's first fill (none is on screen at start) and keeps
what comes back, ``TeamDesk``, as ``window.team``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt

from desktop.views.team.assigned import AssignedPane, install_assigned
from desktop.views.team.batches import BatchesPane, install_batches
from desktop.views.team.presence import PresenceKeeper, install_presence
from desktop.views.team.schedules import SchedulesPane, install_schedules

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

__all__ = ["TeamDesk", "install_team"]


@dataclass
class TeamDesk:
    """The team features installed on one window (tests and the screenshot reach them here)."""

    batches: BatchesPane
    schedules: SchedulesPane
    assigned: AssignedPane
    presence: PresenceKeeper
    host: DeskHost

    def show_panes(self) -> None:
        """Batches and Schedules side by side, sharing the window's width."""
        self.batches.show()
        self.schedules.show()
        self.schedules.raise_()
        window = self.host.widget
        half = max(window.width() // 2, 200)
        window.resizeDocks([self.batches, self.schedules], [half, half], Qt.Orientation.Horizontal)


def install_team(host: DeskHost) -> TeamDesk:
    """Every team feature on the desk: batches, schedules, assigned, presence (the window's hook)."""
    team = TeamDesk(
        batches=install_batches(host),
        schedules=install_schedules(host),
        assigned=install_assigned(host),
        presence=install_presence(host),
        host=host,
    )
    menu = host.menu("&Team")
    for pane in (team.batches, team.schedules, team.assigned):
        menu.addAction(pane.toggleViewAction())
    window = host.widget
    window.splitDockWidget(team.batches, team.schedules, Qt.Orientation.Horizontal)
    window.tabifyDockWidget(team.schedules, team.assigned)
    team.schedules.raise_()
    return team
