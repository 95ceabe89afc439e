"""Read-only viewers for evidence text that can run to tens of megabytes.

Measured offscreen with a plain ``setPlainText``: 10 MB of 109-character lines took ~0.7 s and a
single 10 MB line ~5.5 s, because Qt lays out a block as a whole. With the measures below the first
paint of either takes under 0.1 s (``benchmarks/bench_desk.py`` measures it). So the viewer (a) breaks lines longer than ``long_line`` characters for display only and
(b) loads the text in chunks, appending the next chunk when the reader scrolls near the end. The
full text stays in Python, so searching and highlighting always see all of it.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QRegularExpression, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QKeyEvent,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.widgets.find_bar import FindBar

__all__ = [
    "JsonHighlighter",
    "TextViewer",
    "break_long_lines",
    "monospace_font",
    "pretty_json",
    "quote_pattern",
    "wrap_toggle",
]

CHUNK_CHARS = 1_000_000
LONG_LINE = 2_000

_QUOTE_VARIANTS = {
    "'": "['‘’]",
    "‘": "['‘’]",
    "’": "['‘’]",
    '"': '["“”]',
    "“": '["“”]',
    "”": '["“”]',
}
_WS = re.compile(r"[\s\u00a0]+")


def monospace_font() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def quote_pattern(quote: str) -> re.Pattern[str] | None:
    """A regex for ``quote`` as the citation checker matches it: whitespace-, case- and
    quote-mark-insensitive, so every quote the checker marked verified can be found here too."""
    words = [w for w in _WS.split(quote.strip()) if w]
    if not words:
        return None
    parts = ["".join(_QUOTE_VARIANTS.get(ch, re.escape(ch)) for ch in word) for word in words]
    return re.compile(r"[\s\u00a0]+".join(parts), re.IGNORECASE)


def break_long_lines(text: str, width: int) -> tuple[str, list[int]]:
    """Insert display-only newlines so no line exceeds ``width``; returns the display text and the
    original offsets at which a break was inserted (sorted), to map positions back and forth."""
    if width <= 0 or len(text) <= width:
        return text, []
    lines = text.split("\n")
    if max(map(len, lines)) <= width:
        return text, []
    parts: list[str] = []
    breaks: list[int] = []
    pos = 0
    for line in lines:
        if len(line) > width:
            breaks.extend(pos + i for i in range(width, len(line), width))
            parts.append("\n".join(line[i : i + width] for i in range(0, len(line), width)))
        else:
            parts.append(line)
        pos += len(line) + 1
    return "\n".join(parts), breaks


def pretty_json(text: str) -> str | None:
    """Indented JSON if ``text`` is a JSON object or array, else None (the caller shows it verbatim)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return json.dumps(value, indent=2, ensure_ascii=False)


class JsonHighlighter(QSyntaxHighlighter):
    """Colours keys, strings, numbers and literals; colours are chosen to read on light and dark bases.

    One alternation scanned left to right, so a colon or digit inside a string is never taken for
    a key or a number (separate per-token regexes get that wrong).
    """

    KEY, STRING, NUMBER, LITERAL = "#2f7ed8", "#3a9a3a", "#c7772b", "#a45bc4"
    _TOKEN = QRegularExpression(
        r'("(?:[^"\\]|\\.)*")(\s*:)?|(-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b)|\b(true|false|null)\b'
    )

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.formats: dict[str, QTextCharFormat] = {}
        for name, colour, bold in (
            ("key", self.KEY, True),
            ("string", self.STRING, False),
            ("number", self.NUMBER, False),
            ("literal", self.LITERAL, True),
        ):
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(colour))
            if bold:
                fmt.setFontWeight(QFont.Weight.Bold)
            self.formats[name] = fmt

    def highlightBlock(self, text: str) -> None:
        """QSyntaxHighlighter.highlightBlock: format one line; indented JSON never splits a token."""
        it = self._TOKEN.globalMatch(text)
        while it.hasNext():
            m = it.next()
            if m.capturedStart(1) >= 0:
                name = "key" if m.capturedStart(2) >= 0 else "string"
                self.setFormat(m.capturedStart(1), m.capturedLength(1), self.formats[name])
            elif m.capturedStart(3) >= 0:
                self.setFormat(m.capturedStart(3), m.capturedLength(3), self.formats["number"])
            else:
                self.setFormat(m.capturedStart(4), m.capturedLength(4), self.formats["literal"])


def wrap_toggle(parent: QWidget, apply: Callable[[bool], None]) -> QCheckBox:
    """The "Wrap" check box every text viewer carries, checked; the caller applies the start state."""
    box = QCheckBox("Wrap", parent)
    box.setToolTip("Wrap long lines to the pane's width (off: scroll sideways)")
    box.setChecked(True)
    box.toggled.connect(apply)
    return box


class TextViewer(QWidget):
    """A read-only plain-text viewer that stays responsive on multi-megabyte content."""

    sig_loaded_changed = Signal(int, int)
    """Emitted with (displayed characters, total display characters) whenever more text is loaded."""

    sig_page_requested = Signal(int)
    """A paged item: the reader asked for the page starting at this character offset."""

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        chunk_chars: int = CHUNK_CHARS,
        long_line: int = LONG_LINE,
        monospace: bool = True,
    ) -> None:
        super().__init__(parent)
        self._chunk_chars = max(1, chunk_chars)
        self._long_line = long_line
        self._text = ""
        self._display = ""
        self._breaks: list[int] = []
        self._loaded = 0
        self._ascii = True
        self._paged_total: int | None = None  # a paged item's length; None shows the text whole
        self._page_offset = 0
        self._page_chars = 1

        self.edit = QPlainTextEdit(self)
        self.edit.setReadOnly(True)
        self.edit.setMaximumBlockCount(0)
        self.edit.setUndoRedoEnabled(False)
        self.edit.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        if monospace:
            self.edit.setFont(monospace_font())
        self.status = QLabel(self)
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # names evidence ids and quotes
        self.status.setWordWrap(True)
        self._load_all_button = QPushButton("Load all", self)
        self._load_all_button.clicked.connect(self.load_all)
        # Wrapped by default: a highlighted quote must not run off the pane's edge.
        self.wrap_toggle = wrap_toggle(self, self.set_wrap)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 0, 4, 0)
        bar.addWidget(self.status, 1)
        bar.addWidget(self._load_all_button)
        bar.addWidget(self.wrap_toggle)
        self.set_wrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.edit, 1)
        self.find_bar = FindBar(self, self)  # Ctrl+F, F3 / Shift+F3, Esc
        layout.addWidget(self.find_bar)
        self.pager = self._build_pager()
        layout.addWidget(self.pager)
        layout.addLayout(bar)
        self.edit.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self.edit.installEventFilter(self)
        self._update_status()

    def _build_pager(self) -> QWidget:
        """The pager row of a big item: where the page sits, page buttons and a go-to offset."""
        pager = QWidget(self)
        self.page_label = QLabel(pager)
        self.page_label.setTextFormat(Qt.TextFormat.PlainText)
        # The row must not widen the evidence pane at the validator's expense: the label gives way.
        self.page_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.home_button = QToolButton(pager)
        self.home_button.setText("|◀")
        self.home_button.setToolTip("First page")
        self.prev_page_button = QToolButton(pager)
        self.prev_page_button.setText("◀")
        self.prev_page_button.setToolTip("Previous page (Ctrl+PgUp)")
        self.next_page_button = QToolButton(pager)
        self.next_page_button.setText("▶")
        self.next_page_button.setToolTip("Next page (Ctrl+PgDown, or PgDown at the bottom of a page)")
        self.end_button = QToolButton(pager)
        self.end_button.setText("▶|")
        self.end_button.setToolTip("Last page")
        self.goto_edit = QLineEdit(pager)
        self.goto_edit.setPlaceholderText("Go to character…")
        self.goto_edit.setMinimumWidth(90)  # the placeholder says what it is for
        self.goto_edit.setMaximumWidth(130)
        column = QVBoxLayout(pager)  # where the page is on its own line: a narrow pane shows it whole
        column.setContentsMargins(4, 0, 4, 0)
        column.setSpacing(2)
        column.addWidget(self.page_label)
        row = QHBoxLayout()
        for widget in (self.home_button, self.prev_page_button, self.next_page_button, self.end_button):
            row.addWidget(widget)
        row.addWidget(self.goto_edit)
        row.addStretch(1)
        column.addLayout(row)
        self.home_button.clicked.connect(lambda: self.request_page(0))
        self.prev_page_button.clicked.connect(self.previous_page)
        self.next_page_button.clicked.connect(self.next_page)
        self.end_button.clicked.connect(self.last_page)
        self.goto_edit.returnPressed.connect(self._on_goto)
        self.goto_edit.installEventFilter(self)
        pager.hide()
        return pager

    # ------------------------------------------------------------------ pages of a big item
    @property
    def is_paged(self) -> bool:
        return self._paged_total is not None

    @property
    def page_offset(self) -> int:
        """Where the shown page starts in the item (0 for a text shown whole)."""
        return self._page_offset

    @property
    def page_total(self) -> int:
        """The item's length: the paged item's, or the whole text's."""
        return self._paged_total if self._paged_total is not None else len(self._text)

    def begin_paged(self, total: int, page_chars: int) -> None:
        """Show a big item page by page: nothing is shown until its first page arrives."""
        self._paged_total = total
        self._page_offset = 0
        self._page_chars = max(1, page_chars)
        self._set_text("", notify_find=False)
        self.pager.show()
        self.page_label.setText(f"Loading the first page of {total:,} characters…")

    def show_page(self, offset: int, text: str, total: int, select: tuple[int, int] | None = None) -> None:
        """Show the page at ``offset``; ``select`` is an [start, end) span in item offsets."""
        self._paged_total = total
        self._page_offset = offset
        self._set_text(text, notify_find=False)
        self.pager.show()
        last = offset + len(text)
        self.page_label.setText(f"characters {offset + 1:,}–{last:,} of {total:,}")
        self.page_label.setToolTip(self.page_label.text())  # the label gives way in a narrow pane
        self.home_button.setEnabled(offset > 0)
        self.prev_page_button.setEnabled(offset > 0)
        self.next_page_button.setEnabled(last < total)
        self.end_button.setEnabled(last < total)
        if select is not None:
            start, end = select
            self.select_span(max(0, start - offset), max(0, min(end, last) - offset))

    def show_error(self, message: str) -> None:
        """One line in the status row (a missing chunk, a failed read); the viewer stays usable."""
        self.status.setText(message)
        self.status.setVisible(True)

    def request_page(self, offset: int) -> None:
        if self._paged_total is not None:
            self.sig_page_requested.emit(max(0, min(offset, max(self._paged_total - 1, 0))))

    def next_page(self) -> None:
        if self._paged_total is not None and self._page_offset + len(self._text) < self._paged_total:
            self.request_page(self._page_offset + len(self._text))

    def previous_page(self) -> None:
        if self._paged_total is not None and self._page_offset > 0:
            self.request_page(max(0, self._page_offset - self._page_chars))

    def last_page(self) -> None:
        if self._paged_total is not None:
            total = self._paged_total
            self.request_page(max(0, total - (total % self._page_chars or self._page_chars)))

    def _on_goto(self) -> None:
        raw = self.goto_edit.text().strip().replace(",", "").replace("_", "")
        if not raw.isdigit():
            self.show_error(f"Go to: {raw or 'nothing'} is not a character number")
            return
        target = max(int(raw) - 1, 0)
        self.request_page(target - target % self._page_chars)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """QObject.eventFilter: Ctrl+PgDown / Ctrl+PgUp, and PgDown at a page's bottom, turn pages."""
        if watched is self.goto_edit and event.type() == QEvent.Type.ShortcutOverride:
            assert isinstance(event, QKeyEvent)
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                event.accept()  # Enter here goes to the offset, not to a window shortcut
                return True
            return False
        if watched is not self.edit or self._paged_total is None or event.type() != QEvent.Type.KeyPress:
            return False
        assert isinstance(event, QKeyEvent)
        key, mods = event.key(), event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        bar = self.edit.verticalScrollBar()
        ctrl = mods == Qt.KeyboardModifier.ControlModifier
        plain = mods == Qt.KeyboardModifier.NoModifier
        if key == Qt.Key.Key_PageDown and (ctrl or (plain and bar.value() >= bar.maximum())):
            self.next_page()
            return True
        if key == Qt.Key.Key_PageUp and (
            ctrl or (plain and bar.value() <= bar.minimum() and self._page_offset)
        ):
            self.previous_page()
            return True
        return False

    def set_wrap(self, on: bool) -> None:
        """Wrap lines at the pane's width, or leave them whole (scrolling sideways)."""
        mode = QPlainTextEdit.LineWrapMode.WidgetWidth if on else QPlainTextEdit.LineWrapMode.NoWrap
        self.edit.setLineWrapMode(mode)
        if self.wrap_toggle.isChecked() != on:
            self.wrap_toggle.setChecked(on)

    # ------------------------------------------------------------------ content
    def set_text(self, text: str) -> None:
        """Show ``text`` whole (leaving any paged item); only the first chunk is laid out now."""
        self._paged_total = None
        self._page_offset = 0
        self.pager.hide()
        self._set_text(text, notify_find=True)

    def _set_text(self, text: str, *, notify_find: bool) -> None:
        # Qt stores CR LF as one paragraph break; normalising keeps Python and Qt offsets equal.
        # A page keeps the item's offsets instead: CR LF becomes space LF, the same length.
        if self._paged_total is None:
            self._text = text.replace("\r\n", "\n").replace("\r", "\n")
        else:
            self._text = text.replace("\r\n", " \n").replace("\r", "\n")
        self._ascii = self._text.isascii()
        self._display, self._breaks = break_long_lines(self._text, self._long_line)
        self._loaded = min(len(self._display), self._chunk_chars)
        self.edit.setPlainText(self._display[: self._loaded])
        self._update_status()
        if notify_find:
            self.find_bar.text_changed()

    def clear(self) -> None:
        self.set_text("")

    def text(self) -> str:
        """The full text (with line endings normalised), loaded or not."""
        return self._text

    def displayed_text(self) -> str:
        """What the editor holds right now (display line breaks included)."""
        return self.edit.toPlainText()

    def is_fully_loaded(self) -> bool:
        return self._loaded >= len(self._display)

    def load_more(self) -> None:
        self._load_to(self._loaded + self._chunk_chars)

    def load_all(self) -> None:
        self._load_to(len(self._display))

    def _load_to(self, end: int) -> None:
        end = min(end, len(self._display))
        if end <= self._loaded:
            return
        bar = self.edit.verticalScrollBar()
        keep = bar.value()
        cursor = QTextCursor(self.edit.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(self._display[self._loaded : end])
        self._loaded = end
        bar.setValue(keep)
        self._update_status()

    def _on_scrolled(self, value: int) -> None:
        bar = self.edit.verticalScrollBar()
        if not self.is_fully_loaded() and value >= bar.maximum() - 2 * max(bar.pageStep(), 1):
            self.load_more()

    def _update_status(self) -> None:
        notes: list[str] = []
        total = len(self._display)
        if total and not self.is_fully_loaded():
            notes.append(f"showing {self._loaded:,} of {total:,} characters; scroll down for more")
        if self._breaks:
            notes.append(f"lines longer than {self._long_line:,} characters are broken for display")
        self.status.setText(" · ".join(notes))
        self.status.setVisible(bool(notes))
        self._load_all_button.setVisible(bool(total) and not self.is_fully_loaded())
        self.sig_loaded_changed.emit(self._loaded, total)

    # ------------------------------------------------------------------ search
    def find_quote(self, quote: str) -> tuple[int, int] | None:
        """(start, end) of ``quote`` in the full text, matched like the citation checker does."""
        pattern = quote_pattern(quote)
        if pattern is None:
            return None
        m = pattern.search(self._text)
        return (m.start(), m.end()) if m else None

    def highlight(self, quote: str) -> bool:
        """Select the first match of ``quote`` and scroll to it; loads text up to it if needed."""
        span = self.find_quote(quote)
        if span is None:
            return False
        self.select_span(*span)
        return True

    def select_span(self, start_offset: int, end_offset: int) -> None:
        """Select [start, end) of the full text and scroll to it, loading text up to it if needed."""
        start = self._to_display(start_offset, after_break=True)
        end = self._to_display(end_offset, after_break=False)
        if end > self._loaded:
            self._load_to(end + self._chunk_chars // 2)
        cursor = self.edit.textCursor()
        cursor.setPosition(self._to_qt(start))
        cursor.setPosition(self._to_qt(end), QTextCursor.MoveMode.KeepAnchor)
        self.edit.setTextCursor(cursor)
        self.edit.centerCursor()
        # Lines do not wrap: keep the line starts in view when the match fits without scrolling.
        bar = self.edit.horizontalScrollBar()
        keep = bar.value()
        bar.setValue(0)
        if self.edit.cursorRect().right() > self.edit.viewport().width():
            bar.setValue(keep)

    def selected_text(self) -> str:
        """The selection with Qt's paragraph separators turned back into newlines."""
        return self.edit.textCursor().selectedText().replace("\u2029", "\n")

    def _to_display(self, offset: int, *, after_break: bool) -> int:
        side = bisect.bisect_right if after_break else bisect.bisect_left
        return offset + side(self._breaks, offset)

    def _to_qt(self, display_offset: int) -> int:
        # Qt positions count UTF-16 code units; Python counts code points.
        if self._ascii:
            return display_offset
        return len(self._display[:display_offset].encode("utf-16-le")) // 2
