"""A note (or a reason) for a decision: typed straight away, Ctrl+Enter submits.

Used by the review moves (satisfied or abandon with a note, reopen with a reason). Plain text:
a note is the analyst's words, never markup.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

__all__ = ["NoteDialog"]


class _NoteEdit(QPlainTextEdit):
    sig_submit = Signal()
    """Ctrl+Enter (either Enter key) was pressed: submit the dialog instead of adding a line."""

    def keyPressEvent(self, event: QKeyEvent) -> None:
        submit = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if submit and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.sig_submit.emit()
            return
        super().keyPressEvent(event)


class NoteDialog(QDialog):
    """A note (or a reason) typed straight away: the text box has focus, Ctrl+Enter submits,
    Tab moves to the buttons. ``required`` refuses an empty note."""

    def __init__(
        self, title: str, intro: str, button: str, *, required: bool, parent: QWidget | None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(480, 220)
        self.required = required
        label = QLabel(intro)
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setWordWrap(True)
        self.note_edit = _NoteEdit()
        self.note_edit.setTabChangesFocus(True)
        self.note_edit.setPlaceholderText("required" if required else "optional note for the record")
        self.error_label = QLabel()
        self.error_label.setStyleSheet("color: #c0392b;")
        self.error_label.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.addButton(button, QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self._try_accept)
        self.buttons.rejected.connect(self.reject)
        self.note_edit.sig_submit.connect(self._try_accept)
        layout = QVBoxLayout(self)
        layout.addWidget(label)
        layout.addWidget(self.note_edit, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.note_edit.setFocus(Qt.FocusReason.OtherFocusReason)

    @property
    def note(self) -> str | None:
        return self.note_edit.toPlainText().strip() or None

    def _try_accept(self) -> None:
        if self.required and not self.note:
            self.error_label.setText("Say why.")
            self.error_label.show()
            return
        self.accept()
