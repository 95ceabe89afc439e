"""Text is text: strings from users, models, tools and documents are never interpreted as HTML.

Qt guesses. A ``QLabel`` in its default ``AutoText`` format, a tooltip, a ``QMessageBox`` and an
item view's tooltip all render a string as rich text when ``Qt::mightBeRichText`` says it looks
like HTML, so a task titled ``<h1 style='color:red'>`` became a big red heading and an ``<img>``
in a tool result could ask for a resource. Everything here pins the format instead of guessing:
labels are ``PlainText``; tooltips (which have no format switch) are escaped and wrapped, so Qt
shows exactly the characters given, line breaks included.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolTip,
    QWidget,
)

Index = QModelIndex | QPersistentModelIndex


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` as typed: escaped, whitespace kept, never guessed at."""
    if not text:
        return ""
    return f"<p style='white-space:pre-wrap'>{html.escape(text)}</p>"


def plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """A ``QLabel`` that can only ever show plain text."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    return label


class PlainToolTipDelegate(QStyledItemDelegate):
    """An item delegate whose tooltips show the model's ``ToolTipRole`` text as plain text."""

    def tooltip_text(self, index: Index) -> str:
        """What the tooltip says for ``index`` (tests read it; ``helpEvent`` shows it)."""
        value = index.data(Qt.ItemDataRole.ToolTipRole)
        return value if isinstance(value, str) else ""

    def helpEvent(
        self, event: QHelpEvent, view: QAbstractItemView, option: QStyleOptionViewItem, index: Index
    ) -> bool:
        """QAbstractItemDelegate.helpEvent: show the escaped tooltip instead of Qt's guess."""
        if event is None or event.type() != QEvent.Type.ToolTip or not index.isValid():
            return super().helpEvent(event, view, option, index)
        text = self.tooltip_text(index)
        if text:
            QToolTip.showText(event.globalPos(), plain_tooltip(text), view)
        else:
            QToolTip.hideText()
        return True


__all__ = ["PlainToolTipDelegate", "plain_label", "plain_tooltip"]
