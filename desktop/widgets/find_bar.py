"""Find in document: Ctrl+F in an evidence or answer viewer, next/previous, a match count, Esc.

The window already uses Ctrl+F (the queue filter) and Esc (leave the filter) as window shortcuts.
While the viewer or its find bar has focus those keys belong to the document: the bar answers
Qt's ``ShortcutOverride`` for them, so the window's actions do not fire, and handles the key
press itself. Matching is over the viewer's full text (loaded or not), case-insensitive and
literal, so what the count says is what next/previous walk through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QToolButton, QWidget

__all__ = ["FindBar", "FindTarget", "find_spans"]

MAX_MATCHES = 100_000


def find_spans(text: str, needle: str, limit: int = MAX_MATCHES) -> list[tuple[int, int]]:
    """[start, end) of every non-overlapping, case-insensitive occurrence of ``needle``."""
    if not needle:
        return []
    hay, want = text.casefold(), needle.casefold()
    if len(hay) != len(text) or len(want) != len(needle):  # casefold changed lengths (ß → ss)
        hay, want = text.lower(), needle.lower()
        if len(hay) != len(text):
            hay, want = text, needle
    spans: list[tuple[int, int]] = []
    pos = hay.find(want)
    while pos >= 0 and len(spans) < limit:
        spans.append((pos, pos + len(needle)))
        pos = hay.find(want, pos + max(1, len(want)))
    return spans


def _is(
    event: QKeyEvent, key: Qt.Key, modifiers: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier
) -> bool:
    """The key with exactly these modifiers (the keypad flag ignored: keypad Enter is Enter)."""
    mods = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
    return event.key() == key and mods == modifiers


class FindTarget(Protocol):
    """What the bar searches: ``TextViewer`` (named by shape, so the viewer that holds the bar
    and the bar do not import each other)."""

    @property
    def edit(self) -> QPlainTextEdit:
        """The text widget whose keys the bar watches and whose focus it returns to."""

    @property
    def is_paged(self) -> bool:
        """A big item shown a page at a time (searched in core, through ``FindBar.remote``)."""

    def text(self) -> str:
        """The full text searched (loaded or not)."""

    def selected_text(self) -> str:
        """The selection: what Ctrl+F searches for first."""

    def select_span(self, start_offset: int, end_offset: int) -> None:
        """Select and show a match."""


class FindBar(QWidget):
    """The find bar under a ``TextViewer``; hidden until Ctrl+F."""

    sig_moved = Signal(int, int)
    """The current match changed: (its number from 1, the number of matches)."""

    def __init__(self, viewer: FindTarget, parent: QWidget) -> None:
        """``parent``: the viewer as a widget (the bar sits in its layout)."""
        super().__init__(parent)
        self.viewer = viewer
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("Find in document")
        self.edit.setClearButtonEnabled(True)
        self.count_label = QLabel(self)
        self.count_label.setTextFormat(Qt.TextFormat.PlainText)
        self.prev_button = QToolButton(self)
        self.prev_button.setText("▲")
        self.prev_button.setToolTip("Previous match (Shift+F3)")
        self.next_button = QToolButton(self)
        self.next_button.setText("▼")
        self.next_button.setToolTip("Next match (F3, Enter)")
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setToolTip("Close (Esc)")
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 0, 4, 0)
        row.addWidget(self.edit, 1)
        row.addWidget(self.count_label)
        row.addWidget(self.prev_button)
        row.addWidget(self.next_button)
        row.addWidget(self.close_button)
        self.spans: list[tuple[int, int]] = []
        self.current = -1
        self._searched_text: str | None = None
        # A paged item is searched in core, not in the page on screen: (needle, direction) goes
        # to whoever holds the item (0: the first match from the page shown, 1 next, -1 previous).
        self.remote: Callable[[str, int], None] | None = None
        self.edit.textChanged.connect(self._on_text_changed)
        self.prev_button.clicked.connect(self.find_previous)
        self.next_button.clicked.connect(self.find_next)
        self.close_button.clicked.connect(self.close_bar)
        for widget in (self.edit, viewer.edit):
            widget.installEventFilter(self)
        self.hide()

    # ------------------------------------------------------------------ API
    def open_bar(self, needle: str | None = None) -> None:
        """Show the bar with ``needle`` (default: the viewer's selection, else the last search)."""
        if needle is None:
            selected = self.viewer.selected_text()
            needle = selected if selected and "\n" not in selected else None
        self.show()
        if needle is not None:
            self.edit.setText(needle)
        self.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.edit.selectAll()
        self._refresh()

    def close_bar(self) -> None:
        self.hide()
        self.viewer.edit.setFocus(Qt.FocusReason.OtherFocusReason)

    def reset(self) -> None:
        """Hidden and empty, focus left where it is: another task is on screen, and a search
        typed for the last one (its count, its needle) would not be about this one."""
        self.hide()
        self.edit.blockSignals(True)
        self.edit.clear()
        self.edit.blockSignals(False)
        self.count_label.clear()
        self.spans, self.current, self._searched_text = [], -1, None

    def find_next(self) -> None:
        self._step(1)

    def find_previous(self) -> None:
        self._step(-1)

    def text_changed(self) -> None:
        """The viewer shows new text: the matches are recounted for it."""
        self._searched_text = None
        if self.isVisible():
            self._refresh()

    # ------------------------------------------------------------------ internals
    def show_remote(self, text: str) -> None:
        """What the item's owner found (its search runs in core, off the GUI thread)."""
        self.count_label.setText(text)

    def _refresh(self) -> None:
        if self.remote is not None and self.viewer.is_paged:
            self.spans, self.current = [], -1
            self._searched_text = None
            if self.edit.text():
                self.count_label.setText("searching…")
                self.remote(self.edit.text(), 0)
            else:
                self.count_label.setText("")
            return
        text = self.viewer.text()
        self.spans = find_spans(text, self.edit.text())
        self._searched_text = text
        self.current = -1
        if self.spans:
            self._step(1)
        else:
            self._show_count()

    def _on_text_changed(self, _text: str) -> None:
        self._refresh()

    def _step(self, direction: int) -> None:
        if self.remote is not None and self.viewer.is_paged:
            if self.edit.text():
                self.count_label.setText("searching…")
                self.remote(self.edit.text(), direction)
            return
        if self._searched_text is not self.viewer.text():
            self._refresh()
            if direction == 1:
                return
        if not self.spans:
            self._show_count()
            return
        self.current = (self.current + direction) % len(self.spans)
        self.viewer.select_span(*self.spans[self.current])
        self._show_count()
        self.sig_moved.emit(self.current + 1, len(self.spans))

    def _show_count(self) -> None:
        if not self.edit.text():
            self.count_label.setText("")
        elif not self.spans:
            self.count_label.setText("no matches")
        else:
            more = "+" if len(self.spans) >= MAX_MATCHES else ""
            self.count_label.setText(f"{self.current + 1} of {len(self.spans)}{more}")

    def _handles(self, event: QKeyEvent, watched: QObject) -> str | None:
        if event.matches(QKeySequence.StandardKey.Find) or _is(
            event, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier
        ):
            return "open"
        if _is(event, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier):
            return "previous"
        if _is(event, Qt.Key.Key_F3):
            return "next"
        if watched is self.edit:
            if _is(event, Qt.Key.Key_Escape):
                return "close"
            if _is(event, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier) or _is(
                event, Qt.Key.Key_Enter, Qt.KeyboardModifier.ShiftModifier
            ):
                return "previous"
            if _is(event, Qt.Key.Key_Return) or _is(event, Qt.Key.Key_Enter):
                return "next"
        elif self.isVisible() and _is(event, Qt.Key.Key_Escape):
            return "close"
        return None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """QObject.eventFilter: the document's keys, ahead of the window's shortcuts."""
        if event.type() not in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            return False
        assert isinstance(event, QKeyEvent)
        action = self._handles(event, watched)
        if action is None:
            return False
        if event.type() == QEvent.Type.ShortcutOverride:
            event.accept()  # ours, not the window's Ctrl+F / Esc
            return True
        if action == "open":
            self.open_bar()
        elif action == "close":
            self.close_bar()
        elif not self.isVisible():
            self.open_bar()
        elif action == "next":
            self.find_next()
        else:
            self.find_previous()
        return True
