"""Keyboard conventions every text-entry dialog of the desk follows.

Ctrl+Enter submits from anywhere in the dialog (Enter in a multi-line field is a new line), and
Tab moves focus instead of typing a tab character, so a dialog is filled and sent without the
mouse.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QPlainTextEdit

SUBMIT_KEYS = ("Ctrl+Return", "Ctrl+Enter")


def keyboard_dialog(dialog: QDialog, submit: Callable[[], None], *edits: QPlainTextEdit) -> list[QShortcut]:
    """Wire Ctrl+Enter to ``submit`` and make Tab leave each multi-line ``edits`` field."""
    for edit in edits:
        edit.setTabChangesFocus(True)
    return [QShortcut(QKeySequence(keys), dialog, submit) for keys in SUBMIT_KEYS]


__all__ = ["SUBMIT_KEYS", "keyboard_dialog"]
