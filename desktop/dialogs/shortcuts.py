"""The ``?`` sheet: every keyboard shortcut the desk has, generated from its registered actions.

The sheet used to be a hand-written table, and it forgot Ctrl+O. Now it lists every ``QAction``
of the window that has a shortcut, in registration order, so a new action cannot be missing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QScrollArea, QStyle, QVBoxLayout, QWidget

from desktop.widgets.fit import size_within_screen


def shortcut_rows(actions: Iterable[QAction]) -> list[tuple[str, str]]:
    """(keys, what it does) for every action with a shortcut; keys as the platform spells them."""
    rows: list[tuple[str, str]] = []
    for act in actions:
        keys = [
            k.toString(QKeySequence.SequenceFormat.NativeText) for k in act.shortcuts() if not k.isEmpty()
        ]
        if not keys:
            continue
        name = act.text().replace("&", "").rstrip("…").strip()
        tip = act.toolTip().split(" (")[0].strip()
        what = name if not tip or tip == name else f"{name}: {tip}"
        rows.append(("  or  ".join(keys), what))
    return rows


class ShortcutSheet(QDialog):
    """Every shortcut in one table, as wide as the table and as tall as the screen allows."""

    def __init__(
        self, actions: Iterable[QAction], parent: QWidget | None = None, *, available: QRect | None = None
    ) -> None:
        """``available``: the screen area to fit (default: the sheet's screen's available area)."""
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.rows = shortcut_rows(actions)
        cells = "".join(
            f"<tr><td style='padding:3px 14px 3px 0'><b>{html.escape(k)}</b></td><td>{html.escape(d)}</td></tr>"
            for k, d in self.rows
        )
        self.label = QLabel(f"<table>{cells}</table>")
        self.label.setContentsMargins(8, 8, 8, 8)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidget(self.label)
        self.scroll_area.setWidgetResizable(True)
        # Only ever a vertical bar (a short screen): the table is as wide as the sheet.
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.scroll_area, 1)
        layout.addWidget(buttons)
        table = self.label.sizeHint()
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        margins = layout.contentsMargins()
        chrome_w = margins.left() + margins.right() + 2 * self.scroll_area.frameWidth() + bar
        chrome_h = margins.top() + margins.bottom() + layout.spacing() + buttons.sizeHint().height()
        chrome_h += 2 * self.scroll_area.frameWidth()
        wanted = QSize(table.width() + chrome_w, table.height() + chrome_h)
        size_within_screen(self, wanted, available)
        self.setMinimumWidth(min(wanted.width(), self.width()))

    def table_fits_across(self) -> bool:
        """Whether the whole table's width is in view (no column cut off on the right)."""
        return self.scroll_area.viewport().width() >= self.label.sizeHint().width()
