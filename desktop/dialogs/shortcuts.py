"""The ``?`` sheet: every keyboard shortcut the desk has, in one place."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

SHORTCUTS: tuple[tuple[str, str], ...] = (
    ("S", "Satisfied: close the selected task"),
    ("R", "Revise: ask for another attempt"),
    ("A", "Abandon the selected task (cancels a run)"),
    ("J / K", "Next / previous task in the queue"),
    ("/  or  Ctrl+F", "Filter the queue"),
    ("Esc", "Leave the filter box"),
    ("Ctrl+N", "New task"),
    ("Ctrl+,", "Settings"),
    ("?", "This sheet"),
)


class ShortcutSheet(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        rows = "".join(
            f"<tr><td style='padding:3px 14px 3px 0'><b>{k}</b></td><td>{d}</td></tr>" for k, d in SHORTCUTS
        )
        label = QLabel(f"<table>{rows}</table>")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(label)
        layout.addWidget(buttons)
