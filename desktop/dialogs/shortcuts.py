"""The ``?`` sheet: every keyboard shortcut the desk has, generated from its registered actions.

The sheet used to be a hand-written table, and it forgot Ctrl+O. Now it lists every ``QAction``
of the window that has a shortcut, in registration order, so a new action cannot be missing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QScrollArea, QVBoxLayout, QWidget


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
    def __init__(self, actions: Iterable[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.rows = shortcut_rows(actions)
        cells = "".join(
            f"<tr><td style='padding:3px 14px 3px 0'><b>{html.escape(k)}</b></td><td>{html.escape(d)}</td></tr>"
            for k, d in self.rows
        )
        self.label = QLabel(f"<table>{cells}</table>")
        scroll = QScrollArea()
        scroll.setWidget(self.label)
        scroll.setWidgetResizable(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll, 1)
        layout.addWidget(buttons)
        self.resize(520, 560)
