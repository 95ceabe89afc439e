"""The Disagreements tab: where the team's nodes stated different values, passages side by side.

The marks are read from the attempt's packet (``TaskEvidencePacket.disagreements``, recorded by
``core.team.disagreement`` when the attempt ended); the view only shows them. Each mark is one
group: the subject and kind above, then one column per node with its name, the values it stated
and the sentences it wrote them in, the values highlighted. Passages are node output, so they are set as plain text
and highlighted with a character format, never through HTML.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QResizeEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from core.domain.disagreement import Disagreement, NodeStatement
from desktop.widgets.plain import plain_label, plain_tooltip

__all__ = ["DisagreementView", "badge_text"]

HIGHLIGHT = ("#fdebd0", "#7e5109")  # the warning badge's colours: the same concern, the same look


def badge_text(count: int) -> str:
    """The header badge: "⚠ 1 disagreement", "⚠ 3 disagreements"."""
    return f"⚠ {count} disagreement{'s' if count != 1 else ''}"


class _Passage(QTextEdit):
    """One node's sentence, read-only plain text with the values it states highlighted.

    As tall as its wrapped text at the width it is given, so a passage is read whole, not scrolled.
    """

    def __init__(self, passage: str, spans: list[tuple[int, int]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setAcceptRichText(False)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setPlainText(passage)
        for start, end in spans:
            if 0 <= start < end <= len(passage):
                cursor = QTextCursor(self.document())
                cursor.setPosition(start)
                cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
                fmt = QTextCharFormat()
                fmt.setBackground(QColor(HIGHLIGHT[0]))
                fmt.setForeground(QColor(HIGHLIGHT[1]))
                fmt.setFontWeight(QFont.Weight.Bold)
                cursor.mergeCharFormat(fmt)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """QWidget.resizeEvent: the wrapped height changes with the width."""
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        self.document().setTextWidth(max(50, self.viewport().width()))
        height = int(self.document().size().height()) + 2 * self.frameWidth() + 4
        if height != self.height():
            self.setFixedHeight(height)

    def highlighted(self) -> list[str]:
        """The runs of text shown highlighted (tests read them back from the document's formats)."""
        block = self.document().firstBlock()
        parts: list[str] = []
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.charFormat().background().color() == QColor(HIGHLIGHT[0]):
                    parts.append(fragment.text())
                it += 1
            block = block.next()
        return parts


class _Group(QGroupBox):
    """One mark: a column per node, with each of its passages and the values in them."""

    def __init__(self, mark: Disagreement, parent: QWidget | None = None) -> None:
        super().__init__(f"{mark.subject} — {mark.kind.value} ({len(mark.node_ids)} nodes)", parent)
        self.mark = mark
        self.columns: list[tuple[str, list[_Passage]]] = []
        row = QHBoxLayout(self)
        for node_id in mark.node_ids:
            said = [s for s in mark.statements if s.node_id == node_id]
            column = QVBoxLayout()
            head = plain_label(f"{node_id}: {' · '.join(s.value for s in said)}", self)
            font = head.font()
            font.setBold(True)
            head.setFont(font)
            head.setWordWrap(True)
            head.setToolTip(plain_tooltip("compared as " + ", ".join(s.normalised for s in said)))
            column.addWidget(head)
            passages: list[_Passage] = []
            by_passage: dict[int, list[NodeStatement]] = {}
            for s in said:
                by_passage.setdefault(s.passage_start, []).append(s)
            for group in by_passage.values():
                passage = _Passage(group[0].passage, [s.value_in_passage for s in group], self)
                passages.append(passage)
                column.addWidget(passage)
            column.addStretch(1)
            row.addLayout(column, 1)
            self.columns.append((node_id, passages))


class DisagreementView(QScrollArea):
    """Every mark of the shown attempt, one group each, conflicting passages side by side."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.groups: list[_Group] = []
        self._set_body([])

    def set_disagreements(self, marks: list[Disagreement]) -> None:
        self._set_body(marks)

    def _set_body(self, marks: list[Disagreement]) -> None:
        body = QWidget(self)
        layout = QVBoxLayout(body)
        intro = QLabel(body)
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.PlainText)
        if marks:
            intro.setText(
                "The team's nodes stated different values for the same claim. Found by comparing their "
                "answers (numbers with units, dates, quoted names); check which the final answer used."
            )
        else:
            intro.setText("The team's nodes did not contradict each other on any value found.")
        layout.addWidget(intro)
        self.groups = [_Group(mark, body) for mark in marks]
        for group in self.groups:
            layout.addWidget(group)
        layout.addStretch(1)
        self.setWidget(body)  # the previous body is deleted by the scroll area

    def passages(self) -> list[list[tuple[str, str, list[str]]]]:
        """Per mark, side by side: (node id, passage, the values highlighted in it), as shown."""
        return [
            [(node_id, p.toPlainText(), p.highlighted()) for node_id, shown in g.columns for p in shown]
            for g in self.groups
        ]
