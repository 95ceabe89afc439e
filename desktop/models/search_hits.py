"""Search hits as an item model: one row per hit, the task, where it matched and the passage.

Everything is plain text (titles, passages from tool results): the view shows strings and never
interprets them as markup; matches are marked between « ».
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from core.search.index import DocKind
from core.search.query import SearchHit

__all__ = ["SearchHitsModel", "where"]

Index = QModelIndex | QPersistentModelIndex


class SearchHitsModel(QAbstractTableModel):
    """Hits as rows: task, where it matched, and the passage (plain text)."""

    COLUMNS = ("Task", "Where", "Passage")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hits: list[SearchHit] = []

    def set_hits(self, hits: list[SearchHit], *, append: bool = False) -> None:
        if append and hits:
            first = len(self.hits)
            self.beginInsertRows(QModelIndex(), first, first + len(hits) - 1)
            self.hits.extend(hits)
            self.endInsertRows()
            return
        if append:
            return
        self.beginResetModel()
        self.hits = list(hits)
        self.endResetModel()

    def hit(self, row: int) -> SearchHit | None:
        return self.hits[row] if 0 <= row < len(self.hits) else None

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """QAbstractItemModel.rowCount: one row per hit; a table has no children."""
        return 0 if parent.isValid() else len(self.hits)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """QAbstractItemModel.columnCount."""
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """QAbstractItemModel.headerData: the column names."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section] if 0 <= section < len(self.COLUMNS) else None
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """QAbstractItemModel.data: strings only, which the view shows as text."""
        hit = self.hit(index.row()) if index.isValid() else None
        if hit is None or role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        column = index.column()
        if column == 0:
            return hit.title
        if column == 1:
            return where(hit)
        passage = hit.marked()
        return passage if role == Qt.ItemDataRole.ToolTipRole else " ".join(passage.split())


def where(hit: SearchHit) -> str:
    """The kind badge: "evidence E2 · attempt 1", "issue 1 · attempt 2", "title"."""
    parts = [hit.kind.value]
    if hit.kind == DocKind.EVIDENCE and hit.ref:
        parts = [f"evidence {hit.ref}"]
    elif hit.kind == DocKind.ISSUE and hit.ref:
        parts = [hit.ref]
    elif hit.kind == DocKind.NOTE:
        parts = [hit.ref.split(" ", 1)[0] if hit.ref else "note"]
    if hit.attempt_index is not None:
        parts.append(f"attempt {hit.attempt_index}")
    return " · ".join(parts)
