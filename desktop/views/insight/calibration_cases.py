"""A calibration cell's cases in the queue: the filter, and the chip that says it is on.

Clicking a cell or a rate in the Calibration window narrows the queue to exactly those tasks,
through the queue's own filter (``QueueFilter.task_ids``), like the Batches pane narrows it to a
batch. The chip in the status bar names the cell ("Calibration: validator accepted ∧ analyst not
satisfied") and clears the narrowing when clicked.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QToolButton

if TYPE_CHECKING:
    from desktop.views.host import DeskHost


class CasesFilter:
    """``show`` narrows the queue to a cell's tasks; ``clear`` (or the chip) shows every task again."""

    def __init__(self, host: DeskHost) -> None:
        self._host = host
        self.chip = QToolButton(host.widget)
        self.chip.setObjectName("CalibrationCasesChip")
        self.chip.setToolTip("The queue shows one calibration cell's tasks only; click to show every task")
        self.chip.setAutoRaise(True)
        self.chip.clicked.connect(lambda: self.clear())
        self.chip.hide()
        host.widget.statusBar().addWidget(self.chip)
        host.model.sig_refreshed.connect(self._update_chip)

    def show(self, label: str, task_ids: list[str]) -> asyncio.Task[Any]:
        model = self._host.model
        reload = model.set_filter(
            model.filter.model_copy(update={"task_ids": tuple(task_ids), "cases_label": label})
        )
        self._update_chip()
        return reload

    def clear(self) -> asyncio.Task[Any] | None:
        model = self._host.model
        if model.filter.task_ids is None:
            return None
        reload = model.set_filter(model.filter.model_copy(update={"task_ids": None, "cases_label": ""}))
        self._update_chip()
        return reload

    def _update_chip(self) -> None:
        flt = self._host.model.filter
        if flt.task_ids is None:
            self.chip.hide()
            return
        self.chip.setText(f"Calibration: {flt.cases_label} ({len(flt.task_ids)})  ✕")
        self.chip.show()


__all__ = ["CasesFilter"]
