"""The calibration window's confusion matrix as an item model: a heatmap in a plain ``QTableView``."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from core.calibration import DECISIONS

__all__ = ["MatrixModel"]

Index = QModelIndex | QPersistentModelIndex


class MatrixModel(QAbstractTableModel):
    """Validator status (rows) against analyst decision (columns); cells shaded by their share."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[tuple[str, list[int]]] = []
        self._max = 1

    def set_matrix(self, matrix: dict[str, dict[str, int]]) -> None:
        self.beginResetModel()
        self._rows = [(status, [row.get(d, 0) for d in DECISIONS]) for status, row in matrix.items()]
        self._max = max([1, *(n for _, counts in self._rows for n in counts)])
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::rowCount``."""
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::columnCount``."""
        return 0 if parent.isValid() else len(DECISIONS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Implements ``QAbstractItemModel::data``: the count, and a heat colour behind it."""
        if not index.isValid():
            return None
        n = self._rows[index.row()][1][index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return str(n)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.BackgroundRole:
            share = n / self._max
            return QBrush(QColor(int(255 - 150 * share), int(255 - 90 * share), 255))
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Implements ``QAbstractItemModel::headerData``."""
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return DECISIONS[section] if 0 <= section < len(DECISIONS) else None
        return self._rows[section][0].replace("_", " ") if 0 <= section < len(self._rows) else None
