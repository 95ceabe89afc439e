"""The answer under review: the biggest text on the detail pane, wrapped, and findable.

A citation the analyst clicks names a claim of the answer and a quote of the evidence; the
evidence pane shows the quote, and this pane scrolls the claim into view and marks it, so the two
are read side by side. A search hit inside an answer is shown the same way.
"""

from __future__ import annotations

from PySide6.QtCore import QRegularExpression, QUrl
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QTextBrowser, QTextEdit, QVBoxLayout, QWidget

from desktop.widgets.text_viewer import quote_pattern

__all__ = ["MARKDOWN_NO_HTML", "MARK_COLOUR", "AnswerPane", "LocalOnlyBrowser"]

MARKDOWN_NO_HTML = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub | QTextDocument.MarkdownFeature.MarkdownNoHTML
)
MARK_COLOUR = "#fff2a8"  # a highlighter's yellow: readable under dark and light text alike


class LocalOnlyBrowser(QTextBrowser):
    """Markdown viewer that never fetches anything: an answer may embed remote images or links."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)

    def loadResource(self, type: int, name: QUrl | str) -> object:
        """QTextBrowser.loadResource: refuse every resource; the answer is text, not a web page."""
        return None


class AnswerPane(QWidget):
    """The answer's viewer under a one-line header holding its wrap toggle."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = LocalOnlyBrowser(self)
        self.heading = QLabel("Answer under review", self)
        font = self.heading.font()
        font.setBold(True)
        self.heading.setFont(font)
        self.wrap_toggle = QCheckBox("Wrap", self)
        self.wrap_toggle.setToolTip("Wrap long lines to the pane's width (off: scroll sideways)")
        self.wrap_toggle.setChecked(True)
        self.wrap_toggle.toggled.connect(self.set_wrap)
        bar = QHBoxLayout()
        bar.setContentsMargins(2, 0, 2, 0)
        bar.addWidget(self.heading, 1)
        bar.addWidget(self.wrap_toggle)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.view, 1)
        self.set_wrap(True)

    def set_wrap(self, on: bool) -> None:
        mode = QTextEdit.LineWrapMode.WidgetWidth if on else QTextEdit.LineWrapMode.NoWrap
        self.view.setLineWrapMode(mode)
        if self.wrap_toggle.isChecked() != on:
            self.wrap_toggle.setChecked(on)

    def visible_lines(self) -> float:
        """How many lines of body text the viewer has room for (the layout tests ask)."""
        return self.view.viewport().height() / max(self.view.fontMetrics().lineSpacing(), 1)

    def mark(self, *candidates: str) -> bool:
        """Scroll the first candidate found in the answer into view and mark it; False if none is.

        Matched like the citation checker matches a quote (case, whitespace and quote marks
        ignored), so a claim copied from the answer is found even when re-spaced.
        """
        document = self.view.document()
        for candidate in candidates:
            pattern = quote_pattern(candidate) if candidate else None
            if pattern is None:
                continue
            # Found in the document itself, so lists and tables cannot shift the offsets.
            # PCRE spells Python's \u00a0 as \x{00a0}.
            expression = QRegularExpression(
                pattern.pattern.replace("\\u00a0", "\\x{00a0}"),
                QRegularExpression.PatternOption.CaseInsensitiveOption,
            )
            cursor = document.find(expression)
            if cursor.isNull():
                continue
            self._show(cursor)
            return True
        self.view.setExtraSelections([])
        return False

    def marked_text(self) -> str:
        """The text marked now ("" when nothing is)."""
        marks = self.view.extraSelections()
        return marks[0].cursor.selectedText().replace("\u2029", "\n") if marks else ""

    def _show(self, cursor: QTextCursor) -> None:
        mark = QTextEdit.ExtraSelection()
        fmt = QTextCharFormat()
        fmt.setBackground(QColor(MARK_COLOUR))
        fmt.setForeground(QColor("#000000"))
        mark.format = fmt
        mark.cursor = cursor
        self.view.setExtraSelections([mark])
        self.view.setTextCursor(cursor)
        self.view.ensureCursorVisible()

    def clear_mark(self) -> None:
        self.view.setExtraSelections([])
