"""The reason codes offered on Revise, Abandon and Override: one key each.

The workspace's taxonomy (``core.domain.reasons``) as radio buttons numbered 1, 2, 3…; the digit
picks one wherever focus is not in a text field, Alt+digit picks it from anywhere (a text field
keeps its digits), 0 clears the choice. The keys are read by an event filter on the dialog: a key
the focused widget does not take (every key but text) reaches the dialog, so this needs no
window activation, unlike a ``QShortcut``. Attached to an existing dialog just above its
buttons, so the dialogs themselves stay as they are.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QBoxLayout,
    QButtonGroup,
    QComboBox,
    QDialog,
    QFormLayout,
    QGroupBox,
    QLayout,
    QLineEdit,
    QPlainTextEdit,
    QRadioButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from core.domain.reasons import Reason

__all__ = ["ReasonPicker", "attach_reason_picker"]


class ReasonPicker(QGroupBox):
    """``reason`` is the chosen code, or None."""

    def __init__(self, reasons: list[Reason], parent: QWidget | None = None) -> None:
        super().__init__("Reason (optional; press its number, 0 for none)", parent)
        self.setObjectName("ReasonPicker")
        self._group = QButtonGroup(self)
        self._group.setExclusive(False)  # none chosen is a valid answer; exclusivity kept by hand
        self.buttons: dict[str, QRadioButton] = {}
        self._keys: dict[int, str | None] = {int(Qt.Key.Key_0): None}
        layout = QVBoxLayout(self)
        layout.setSpacing(2)
        for r in reasons:
            words = r.code.replace("_", " ")
            button = QRadioButton(f"{r.key}  {words}" if r.key else words, self)
            button.setToolTip(r.description)
            button.setAutoExclusive(False)
            button.toggled.connect(lambda on, code=r.code: self._toggled(code, on))
            self._group.addButton(button)
            self.buttons[r.code] = button
            layout.addWidget(button)
            if r.key:
                self._keys[int(Qt.Key.Key_0) + int(r.key) % 10] = r.code

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Implements ``QObject::eventFilter``: a digit (or Alt+digit) that reached the dialog picks."""
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            mods = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
            plain = mods in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.AltModifier)
            if event.key() in self._keys and plain:
                self.choose(self._keys[event.key()])
                return True
        return super().eventFilter(watched, event)

    @property
    def reason(self) -> str | None:
        return next((code for code, b in self.buttons.items() if b.isChecked()), None)

    def choose(self, code: str | None) -> None:
        for c, button in self.buttons.items():
            button.setChecked(c == code)

    def _toggled(self, code: str, on: bool) -> None:
        if on:
            for c, button in self.buttons.items():
                if c != code and button.isChecked():
                    button.setChecked(False)


class _AltOnly(QObject):
    """Alt+digit inside a text field picks a reason; plain digits stay text."""

    def __init__(self, picker: ReasonPicker) -> None:
        super().__init__(picker)
        self._picker = picker

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Implements ``QObject::eventFilter``."""
        if (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.modifiers() & Qt.KeyboardModifier.AltModifier
        ):
            return self._picker.eventFilter(watched, event)
        return False


def attach_reason_picker(dialog: QDialog, reasons: list[Reason]) -> ReasonPicker:
    """Put a picker into ``dialog`` just above its last row (the buttons)."""
    picker = ReasonPicker(reasons, dialog)
    dialog.installEventFilter(picker)
    for child in dialog.findChildren(QWidget):  # Alt+digit in a field that takes digits picks too
        if isinstance(child, QLineEdit | QPlainTextEdit | QTextEdit | QComboBox):
            child.installEventFilter(_AltOnly(picker))
    layout: QLayout | None = dialog.layout()
    assert layout is not None
    if isinstance(layout, QBoxLayout):
        layout.insertWidget(layout.count() - 1, picker)
    elif isinstance(layout, QFormLayout):
        layout.insertRow(layout.rowCount() - 1, picker)
    else:
        layout.addWidget(picker)
    return picker
