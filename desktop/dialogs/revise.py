"""The Revise dialog: the prompt for the next attempt, prefilled with the validator's advice."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from desktop.dialogs.keys import keyboard_dialog
from desktop.widgets.plain import plain_label


class ReviseDialog(QDialog):
    def __init__(self, task_title: str, recommended: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Revise")
        self.resize(560, 320)
        self.subject_label = plain_label(task_title, self)
        self.subject_label.setWordWrap(True)
        font = self.subject_label.font()
        font.setBold(True)
        self.subject_label.setFont(font)
        intro = plain_label(
            "Ask for another attempt at this task. The prompt below is sent to the agent; it starts "
            "from the validator's recommendation when there is one. Ctrl+Enter sends it.",
            self,
        )
        intro.setWordWrap(True)
        self.prompt_edit = QPlainTextEdit(recommended)
        self.note_edit = QLineEdit(placeholderText="optional note for the record")
        self.error_label = plain_label(parent=self)
        self.error_label.setStyleSheet("color: #c0392b;")
        self.error_label.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.addButton("Revise and run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self._try_accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.subject_label)
        layout.addWidget(intro)
        layout.addWidget(self.prompt_edit, 1)
        layout.addWidget(self.note_edit)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self._shortcuts = keyboard_dialog(self, self._try_accept, self.prompt_edit)
        self.prompt_edit.setFocus()

    @property
    def prompt(self) -> str:
        return self.prompt_edit.toPlainText().strip()

    @property
    def note(self) -> str | None:
        return self.note_edit.text().strip() or None

    def _try_accept(self) -> None:
        if not self.prompt:
            self.error_label.setText("Say what the next attempt should change.")
            self.error_label.show()
            return
        self.accept()
