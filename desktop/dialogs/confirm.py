"""A small confirmation dialog opened with ``open()`` (never ``exec()``: a nested event loop
inside the qasync loop would step asyncio tasks re-entrantly)."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget


class ConfirmDialog(QDialog):
    def __init__(self, title: str, message: str, confirm_label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        label = QLabel(message)
        label.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.confirm_button = buttons.addButton(confirm_label, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(label)
        layout.addWidget(buttons)
        self.resize(420, 140)
