"""The judge's 2x2 (validator accepted or not × analyst satisfied or not) as a clickable table.

Each cell carries its name (``core.calibration.CELLS``) in ``CELL_ROLE``, so a click opens the
queue filtered to exactly that cell's cases.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from core.domain.agreement import Rates

__all__ = ["CELL_ROLE", "CELL_WORDS", "CellsModel"]

Index = QModelIndex | QPersistentModelIndex
CELL_ROLE = Qt.ItemDataRole.UserRole + 1
_ROWS = ["validator accepted", "validator did not accept"]
_COLUMNS = ["analyst satisfied", "analyst not satisfied"]
_NAMES = [["true_accept", "false_accept"], ["false_reject", "true_reject"]]
CELL_WORDS = {
    "true_accept": "validator accepted ∧ analyst satisfied",
    "false_accept": "validator accepted ∧ analyst not satisfied (false accepts)",
    "false_reject": "validator did not accept ∧ analyst satisfied (false rejects)",
    "true_reject": "validator did not accept ∧ analyst not satisfied",
}


class CellsModel(QAbstractTableModel):
    """Two rows, two columns: the counts; the two error cells tinted."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._counts = [[0, 0], [0, 0]]

    def set_rates(self, rates: Rates | None) -> None:
        self.beginResetModel()
        self._counts = [[rates.a, rates.b], [rates.c, rates.d]] if rates is not None else [[0, 0], [0, 0]]
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::rowCount``."""
        return 0 if parent.isValid() else 2

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::columnCount``."""
        return 0 if parent.isValid() else 2

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Implements ``QAbstractItemModel::data``: the count, its cell's name, an error tint."""
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return str(self._counts[r][c])
        if role == CELL_ROLE:
            return _NAMES[r][c]
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{CELL_WORDS[_NAMES[r][c]]}: click to list these tasks in the queue"
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.BackgroundRole and r != c:
            return QBrush(QColor("#fde68a"))
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Implements ``QAbstractItemModel::headerData``."""
        if role != Qt.ItemDataRole.DisplayRole or not 0 <= section < 2:
            return None
        return (_COLUMNS if orientation == Qt.Orientation.Horizontal else _ROWS)[section]
