"""The Batches pane: every batch with its progress, and the queue narrowed to one of them.

Rows come from ``core.tasks.team_views`` (the desk counts nothing itself) and are read again
shortly after any task change is announced, so progress moves live as workers and analysts get
through a batch. Activating a batch sets the queue's existing batch filter; a "Batch: X ✕" chip
in the status bar says the queue is narrowed and clears it with one click.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QApplication,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
    QToolButton,
)

from core.tasks.team_views import BatchView, TeamViews
from desktop.views.team.pane import TeamPane

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

HEADERS = ("Batch", "Created", "Rows", "Progress", "By status")
COL_NAME, COL_CREATED, COL_ROWS, COL_PROGRESS, COL_STATUSES = range(5)
PROGRESS_ROLE = Qt.ItemDataRole.UserRole + 1  # (decided, total) for the progress bar
BATCH_ID_ROLE = Qt.ItemDataRole.UserRole + 2


def _cell(batch: BatchView, column: int, role: int) -> Any:
    if role == BATCH_ID_ROLE:
        return batch.batch_id
    if role == PROGRESS_ROLE and column == COL_PROGRESS:
        return (batch.decided, batch.total)
    if role == Qt.ItemDataRole.ToolTipRole:
        return f"{batch.name}\n{batch.status_summary()}\nbatch id {batch.batch_id[:12]}"
    if role != Qt.ItemDataRole.DisplayRole:
        return None
    return {
        COL_NAME: batch.name,
        COL_CREATED: batch.created_at.astimezone().strftime("%Y-%m-%d %H:%M"),
        COL_ROWS: str(batch.rows),
        COL_PROGRESS: f"{batch.decided}/{batch.total} decided",
        COL_STATUSES: batch.status_summary(),
    }.get(column)


class ProgressDelegate(QStyledItemDelegate):
    """Paints decided/total as the platform's progress bar, with the count as its text."""

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        """QStyledItemDelegate.paint."""
        value = index.data(PROGRESS_ROLE)
        if not isinstance(value, tuple):
            super().paint(painter, option, index)
            return
        decided, total = value
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 3, -2, -3)
        bar.minimum = 0
        bar.maximum = max(total, 1)
        bar.progress = decided
        bar.text = f"{decided}/{total}"
        bar.textVisible = True
        bar.state = option.state | QStyle.StateFlag.State_Horizontal  # else Qt 6 fills it bottom-up
        style = option.widget.style() if option.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter)


class BatchesPane(TeamPane[BatchView]):
    """The dock; ``set_batch`` narrows the queue, ``chip`` shows and clears the narrowing."""

    def __init__(self, host: DeskHost) -> None:
        self.views = TeamViews(host.services.workspace.store)
        super().__init__(host, "Batches", HEADERS, _cell, lambda: self.views.batches())
        self._names: dict[str, str] = {}
        self.table.setItemDelegateForColumn(COL_PROGRESS, ProgressDelegate(self.table))
        self.table.setColumnWidth(COL_PROGRESS, 140)
        self.table.activated.connect(self._activated)
        self.chip = QToolButton(host.widget)
        self.chip.setObjectName("BatchChip")
        self.chip.setToolTip("The queue shows one batch only; click to show every task")
        self.chip.setAutoRaise(True)
        self.chip.clicked.connect(lambda: self.set_batch(None))
        self.chip.hide()
        host.widget.statusBar().addWidget(self.chip)
        host.model.sig_refreshed.connect(self._update_chip)

    def set_batch(self, batch_id: str | None) -> asyncio.Task[Any] | None:
        """Narrow the queue to one batch (None: every task), through the queue's own filter.

        Returns the queue's reload (None when the filter already was that), for callers that wait.
        """
        model = self._host.model
        reload = None
        if model.filter.batch_id != batch_id:
            reload = model.set_filter(model.filter.model_copy(update={"batch_id": batch_id}))
        self._update_chip()
        return reload

    def _activated(self, index: QModelIndex) -> None:
        self.set_batch(index.data(BATCH_ID_ROLE))

    def shown(self, rows: list[BatchView]) -> None:
        self._names = {b.batch_id: b.name for b in rows}
        if rows and not self.isVisible() and not self.property("shown_once"):
            self.setProperty("shown_once", True)
            self.show()  # a workspace with batches shows them once; the Team menu hides them
        self._update_chip()

    def _update_chip(self) -> None:
        batch_id = self._host.model.filter.batch_id
        if batch_id is None:
            self.chip.hide()
            return
        self.chip.setText(f"Batch: {self._names.get(batch_id, batch_id[:12])}  ✕")
        self.chip.show()


def install_batches(host: DeskHost) -> BatchesPane:
    pane = BatchesPane(host)
    host.widget.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, pane)
    pane.hide()
    host.model.sig_refreshed.connect(pane.reload_soon)  # the first queue load brings the first read
    return pane


__all__ = ["BatchesPane", "install_batches"]
