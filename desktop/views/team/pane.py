"""What the team panes share: a dock that reloads its rows from core, live and debounced.

Batches, schedules and "assigned" are small lists read whole (a handful to a few hundred rows),
so each pane asks core for all of them again shortly after a change is announced rather than
patching rows: one read per burst of notices, never one per notice. ``team.install`` puts them
on the desk.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QDockWidget, QHeaderView, QTableView, QVBoxLayout, QWidget

from desktop.models.rows_model import RowsModel

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

R = TypeVar("R")
DEBOUNCE_MS = 300  # a burst of notices (a batch being queued) costs one reload


class TeamPane(QDockWidget, Generic[R]):
    """A dock listing rows core computes; ``load`` is the coroutine that reads them."""

    def __init__(
        self,
        host: DeskHost,
        title: str,
        headers: Sequence[str],
        cell: Callable[[R, int, int], Any],
        load: Callable[[], Coroutine[Any, Any, list[R]]],
    ) -> None:
        super().__init__(title, host.widget)
        self.setObjectName(f"{title.replace(' ', '')}Pane")
        self._host = host
        self._load = load
        self._closed = False
        self._reading: asyncio.Task[list[R]] | None = None
        self._again = False
        self._stale = True  # a hidden pane reads nothing after its first rows, until it is shown
        self.model: RowsModel[R] = RowsModel(headers, cell, self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.body = QWidget(self)
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.setContentsMargins(4, 4, 4, 4)
        self.body_layout.addWidget(self.table)
        self.setWidget(self.body)
        self._debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._debounce.timeout.connect(self.reload)
        bridge = host.services.bridge
        bridge.sig_task_changed.connect(self.reload_soon)
        bridge.sig_tasks_changed.connect(self.reload_soon)
        self.visibilityChanged.connect(self._visibility_changed)
        host.widget.installEventFilter(self)

    @property
    def rows(self) -> list[R]:
        return self.model.rows

    def reload_soon(self, *_args: object) -> None:
        """A change was announced: read again shortly if the pane shows (else when it is shown)."""
        if self._closed:
            return
        if self.isVisible() or self._reading is None:  # hidden: only the very first read
            self._debounce.start()
        else:
            self._stale = True

    def _visibility_changed(self, visible: bool) -> None:
        if visible and self._stale:
            self.reload_soon()

    def reload(self) -> asyncio.Task[list[R]] | None:
        """Read the rows again; a reload asked for while one reads runs once more after it."""
        if self._closed:
            return None
        if self._reading is not None and not self._reading.done():
            self._again = True
            return self._reading
        self._stale = False
        self._reading = self._host.ops.run(
            self._load(), what=f"Reading {self.windowTitle().lower()}", on_done=self._show
        )
        return self._reading

    def _show(self, rows: list[R]) -> None:
        if self._closed:
            return
        self.model.set_rows(rows)
        self.shown(rows)
        if self._again:
            self._again = False
            self.reload()

    def shown(self, rows: list[R]) -> None:
        """Hook: the rows are on screen (subclasses update what depends on them)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """QObject.eventFilter: the window closing stops the pane (no reload after the loop ends)."""
        if watched is self._host.widget and event.type() == QEvent.Type.Close:
            self.close_pane()
        return False

    def close_pane(self) -> None:
        self._closed = True
        self._debounce.stop()


__all__ = ["DEBOUNCE_MS", "TeamPane"]
