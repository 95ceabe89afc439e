"""The History tab: every recorded move on a case, and which attempt the detail pane opens on.

The timeline comes from ``core.tasks.history.case_history``, so the desk adds no rule of its own;
the moves themselves (undo, reopen, decisions with notes) are the window's (``window/review.py``).
All text reaches the screen as plain text (item text).
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtWidgets import (
    QHeaderView,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeView,
    QTreeWidget,
    QTreeWidgetItem,
    QWidget,
)

from core.domain.records import AttemptRecord
from core.tasks.diff import no_answer_reason
from core.tasks.dossier import TaskDossier
from core.tasks.history import EntryKind, case_history
from core.tasks.review import read_only_reason


class WrappingDelegate(QStyledItemDelegate):
    """Row heights measured at the column's width, so wrapped text gets its lines.

    QTreeView asks a delegate for a row's height with no width in the option, and Qt's style then
    measures the text on one unbounded line: word wrap on, rows still one line tall.
    """

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        """QStyledItemDelegate.sizeHint, at the width of ``index``'s column."""
        view = self.parent()
        if isinstance(view, QTreeView):
            sized = QStyleOptionViewItem(option)
            sized.rect = QRect(0, 0, max(view.columnWidth(index.column()), 1), 1)
            return super().sizeHint(sized, index)
        return super().sizeHint(option, index)


class HistoryView(QTreeWidget):
    """One row per recorded move, oldest first: time, who, what, note or prompt.

    What and the note share the width and wrap: a fixed 270 px "What" clipped a failure's reason
    at every window size, leaving it to a tooltip.
    """

    COLUMNS = ("Time", "Who", "What", "Note / prompt")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setColumnCount(len(self.COLUMNS))
        self.setHeaderLabels(list(self.COLUMNS))
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(False)  # a wrapped row is as tall as its text
        self.setWordWrap(True)
        self.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.setAlternatingRowColors(True)
        self.setItemDelegate(WrappingDelegate(self))
        header = self.header()
        header.setStretchLastSection(False)
        header.sectionResized.connect(lambda *_: self.scheduleDelayedItemsLayout())  # heights follow widths
        for column in (0, 1):  # time and who: as wide as what they hold
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        for column in (2, 3):  # what happened and the note: the rest, shared
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)

    def set_dossier(self, dossier: TaskDossier | None) -> None:
        self.clear()
        if dossier is None:
            return
        for entry in case_history(dossier):
            extra = " · ".join(
                x for x in (entry.note, f"prompt: {entry.prompt}" if entry.prompt else None) if x
            )
            when = entry.time.astimezone().strftime("%Y-%m-%d %H:%M")
            item = QTreeWidgetItem([when, entry.actor, entry.summary, extra.replace("\n", " ")])
            for column, text in enumerate((when, entry.actor, entry.summary, extra)):
                item.setToolTip(column, text)
            if entry.kind is EntryKind.DECISION:
                font = item.font(2)
                font.setBold(True)
                item.setFont(2, font)
            self.addTopLevelItem(item)

    def rows(self) -> list[tuple[str, str, str, str]]:
        """The visible text of every row (tests read the tab the way an analyst would)."""
        out = []
        for i in range(self.topLevelItemCount()):
            item = self.topLevelItem(i)
            assert item is not None
            out.append((item.text(0), item.text(1), item.text(2), item.text(3)))
        return out


def attempt_to_show(dossier: TaskDossier) -> AttemptRecord | None:
    """The attempt the detail pane opens on: the latest, unless it produced nothing while an earlier
    answer is back for review (a failed revision): then that answer, which is what is decided on."""
    attempts = sorted(dossier.attempts, key=lambda a: a.index)
    if not attempts:
        return None
    latest = attempts[-1]
    if (latest.final_output or "").strip() or not dossier.task.status.requires_user_action:
        return latest
    usable = [a for a in attempts if (a.final_output or "").strip()]
    return usable[-1] if usable else latest


def failure_notice(dossier: TaskDossier) -> str:
    """One line above the answer: a read-only task says where it came from; a failed revision says
    which answer is under review; "" otherwise."""
    why = read_only_reason(dossier.task)
    if why is not None:
        return why[0].upper() + why[1:]
    shown = attempt_to_show(dossier)
    latest = max(dossier.attempts, key=lambda a: a.index, default=None)
    if shown is None or latest is None or shown is latest:
        return ""
    return (
        f"Attempt {latest.index} produced no usable answer ({no_answer_reason(latest) or 'no text'}); "
        f"the answer of attempt {shown.index} is back for review."
    )


__all__ = ["HistoryView", "attempt_to_show", "failure_notice"]
