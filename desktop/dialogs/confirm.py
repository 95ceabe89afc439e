"""A small confirmation dialog opened with ``open()`` (never ``exec()``: a nested event loop
inside the qasync loop would step asyncio tasks re-entrantly).

The thing being confirmed (a task's title) is shown on its own line, in full and as plain text:
two similar titles once looked identical and the wrong task was abandoned.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QVBoxLayout, QWidget

from desktop.widgets.plain import plain_label


class ConfirmDialog(QDialog):
    def __init__(
        self,
        title: str,
        message: str,
        confirm_label: str,
        parent: QWidget | None = None,
        *,
        subject: str | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        layout = QVBoxLayout(self)
        self.subject_label = None
        if subject is not None:
            self.subject_label = plain_label(subject, self)
            self.subject_label.setWordWrap(True)
            self.subject_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            font = self.subject_label.font()
            font.setBold(True)
            self.subject_label.setFont(font)
            layout.addWidget(self.subject_label)
        self.message_label = plain_label(message, self)
        self.message_label.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.confirm_button = buttons.addButton(confirm_label, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(self.message_label)
        layout.addWidget(buttons)
        self.resize(460, 150)
