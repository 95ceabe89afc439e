"""Widgets that give way to the pane they sit in instead of widening it.

A row of labels and badges in a ``QHBoxLayout`` makes its width the pane's minimum: one long
outcome word or one more badge pushed the detail pane wider, and the window's splitter moved the
queue by itself between tasks. A ``FlowLayout`` wraps its items onto the next line instead (Qt's
own "Flow Layout" example), and a ``ClampedLabel`` shows at most a few lines of a long text with an
ellipsis, the whole text in its tooltip.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QLabel,
    QLayout,
    QLayoutItem,
    QSizePolicy,
    QStyle,
    QStyleOptionComboBox,
    QWidget,
)

from desktop.widgets.plain import plain_tooltip

__all__ = ["ClampedLabel", "FittingCombo", "FlowLayout", "screen_area", "size_within_screen"]

SCREEN_SHARE = 0.92  # of the available area a dialog may take: its frame and the panel stay visible


def screen_area(widget: QWidget) -> QRect:
    """The available area of ``widget``'s screen (minus panels and docks), or an empty rect."""
    screen = widget.screen() or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect()


def size_within_screen(widget: QWidget, wanted: QSize, available: QRect | None = None) -> None:
    """Resize ``widget`` to ``wanted``, shrunk to fit ``available`` (default: its screen's area).

    A dialog sized in fixed pixels was taller than a 1024x640 laptop's screen (the bundle viewer)
    or too narrow for its own table (the shortcut sheet, which then needed both scroll bars).
    """
    area = available if available is not None and not available.isEmpty() else screen_area(widget)
    width, height = wanted.width(), wanted.height()
    if not area.isEmpty():
        width = min(width, int(area.width() * SCREEN_SHARE))
        height = min(height, int(area.height() * SCREEN_SHARE))
    widget.resize(max(width, 1), max(height, 1))


class FlowLayout(QLayout):
    """Items left to right, wrapping to a new line when the width runs out."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._gap = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:
        """QLayout.addItem."""
        self._items.append(item)

    def insertWidget(self, position: int, widget: QWidget) -> None:
        """Place ``widget`` at ``position`` (badges go before the usage label)."""
        self.addWidget(widget)
        item = self._items.pop()
        self._items.insert(position, item)
        self.invalidate()

    def count(self) -> int:
        """QLayout.count."""
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        """QLayout.itemAt."""
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        """QLayout.takeAt."""
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        """QLayout.expandingDirections: none; the row takes the height its items need."""
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        """QLayout.hasHeightForWidth: the height depends on how many lines the width allows."""
        return True

    def heightForWidth(self, width: int) -> int:
        """QLayout.heightForWidth."""
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        """QLayout.setGeometry."""
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:
        """QLayout.sizeHint: the widest item, the height of one line of them."""
        return self.minimumSize()

    def minimumSize(self) -> QSize:
        """QLayout.minimumSize: the widest single item, so any width down to it still works."""
        size = QSize()
        for item in self._visible():
            size = size.expandedTo(item.minimumSize())
        margins: QMargins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _visible(self) -> list[QLayoutItem]:
        return [i for i in self._items if (w := i.widget()) is None or not w.isHidden()]

    def _arrange(self, rect: QRect, *, move: bool) -> int:
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, line = area.x(), area.y(), 0
        for item in self._visible():
            hint = item.sizeHint()
            width = min(hint.width(), max(area.width(), 1))
            if x + width > area.right() + 1 and line > 0:
                x, y, line = area.x(), y + line + self._gap, 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), QSize(width, hint.height())))
            x += width + self._gap * 2
            line = max(line, hint.height())
        return y + line - rect.y() + margins.bottom()


class ClampedLabel(QLabel):
    """Plain text cut to ``lines`` lines of the label's width with an ellipsis; whole in the tooltip."""

    def __init__(self, lines: int = 2, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._lines = lines
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def set_full_text(self, text: str) -> None:
        self._full = text
        self._fit()

    def full_text(self) -> str:
        return self._full

    def resizeEvent(self, event: QResizeEvent) -> None:
        """QWidget.resizeEvent: a new width fits a different amount of the text."""
        super().resizeEvent(event)
        self._fit()

    def minimumSizeHint(self) -> QSize:
        """QLabel.minimumSizeHint: any width."""
        return QSize(0, super().minimumSizeHint().height())

    def _fit(self) -> None:
        metrics = self.fontMetrics()
        flat = " ".join(self._full.split())
        # Wrapping loses part of each line's end: leave a few characters' slack per line.
        room = max(self.width() - 4 * metrics.averageCharWidth(), 40) * self._lines
        shown = metrics.elidedText(flat, Qt.TextElideMode.ElideRight, room)
        if shown != self.text():
            self.setText(shown)
        self.setToolTip(plain_tooltip(self._full) if shown != flat or "\n" in self._full.strip() else "")
        # Always the height of all its lines: a shorter text must not hand the answer a few pixels
        # that the next task takes back (the splitters below would move between tasks).
        self.setFixedHeight(metrics.lineSpacing() * self._lines + 4)


class FittingCombo(QComboBox):
    """A combo box that asks for the width of the choice it shows, and gives way to a few letters.

    With ``AdjustToMinimumContentsLengthWithIcon`` a combo asks for its minimum contents length
    both as its least and its preferred width: the queue's filter showed "Any outcom" at every
    window size. The least width stays that short one, so a narrow queue still shrinks it.
    """

    def __init__(self, least_chars: int = 6, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(least_chars)
        self.currentIndexChanged.connect(lambda _i: self.updateGeometry())

    def sizeHint(self) -> QSize:
        """QComboBox.sizeHint: room for the current choice's whole text."""
        least = super().sizeHint()
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        text = QSize(self.fontMetrics().horizontalAdvance(self.currentText()), least.height())
        fitted = self.style().sizeFromContents(QStyle.ContentsType.CT_ComboBox, option, text, self)
        return QSize(max(least.width(), fitted.width()), least.height())

    def text_fits(self) -> bool:
        """Whether the current choice's text is shown whole at the combo's present width."""
        return self.width() >= self.sizeHint().width()
