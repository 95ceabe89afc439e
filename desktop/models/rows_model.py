"""A read-only table over rows core answered whole: the team panes and calibration's agreement tables.

Both used to keep a table model of their own (one generic over a ``cell`` function, one over
lists of strings) doing the same job; one model serves both. Rows are replaced whole
(``set_rows``): the lists are small (a handful to a few hundred rows) and read again after a
change, never patched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

__all__ = ["RowsModel", "text_cell"]

R = TypeVar("R")
Index = QModelIndex | QPersistentModelIndex
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


def text_cell(row: list[str], column: int, role: int) -> Any:
    """Cells of a table of strings: the text, figures right-aligned, and the first column's text
    as its tooltip (a long model name or warning code may be elided)."""
    if role == Qt.ItemDataRole.DisplayRole:
        return row[column]
    if role == Qt.ItemDataRole.ToolTipRole and column == 0:
        return row[0]
    if role == Qt.ItemDataRole.TextAlignmentRole and column > 0:
        return _RIGHT
    return None


class RowsModel(QAbstractTableModel, Generic[R]):
    """A read-only table over the rows last answered; ``cell`` says what each column shows per role.

    ``explained``: a tooltip per header (short headers fit the column, the tip says it all).
    """

    def __init__(
        self,
        headers: Sequence[str],
        cell: Callable[[R, int, int], Any],
        parent: QObject | None = None,
        *,
        explained: Sequence[str] | None = None,
    ) -> None:
        super().__init__(parent)
        self._headers = list(headers)
        self._explained = list(explained) if explained is not None else None
        self._cell = cell
        self.rows: list[R] = []

    def set_rows(self, rows: list[R]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::rowCount``: a flat table has rows only under the root."""
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::columnCount``."""
        return 0 if parent.isValid() else len(self._headers)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Implements ``QAbstractItemModel::data``: whatever ``cell`` answers for the row, column and role."""
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        return self._cell(self.rows[index.row()], index.column(), role)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Implements ``QAbstractItemModel::headerData``: column titles and their tooltips."""
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(self._headers):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self._headers[section]
        if role == Qt.ItemDataRole.ToolTipRole and self._explained is not None:
            return self._explained[section]
        return None
