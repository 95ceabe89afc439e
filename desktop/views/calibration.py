"""The Calibration window: how far the validator agrees with the analysts' final decisions.

The figures come from ``core.calibration`` (the same ones ``evidence-desk calibration`` prints),
computed by a coroutine the window is handed, run through ``CoreOps`` so the database work never
blocks painting. pyqtgraph is not installed and QtCharts is not needed for this: the confusion
matrix is a ``QTableView`` heatmap and the weekly trend a small ``QPainter`` sparkline.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QPointF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.calibration import DECISIONS, Calibration, CalibrationFilter
from core.domain.validation import FailureCategory
from desktop.ops import CoreOps

Source = Callable[[CalibrationFilter], Coroutine[Any, Any, Calibration]]
Index = QModelIndex | QPersistentModelIndex


class MatrixModel(QAbstractTableModel):
    """Validator status (rows) against analyst decision (columns); cells shaded by their share."""

    def __init__(self, parent: QWidget | None = None) -> None:
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


class RowsModel(QAbstractTableModel):
    """A plain read-only table of strings (agreement per category, per model, per warning)."""

    def __init__(self, headers: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._headers = headers
        self._rows: list[list[str]] = []

    def set_rows(self, rows: list[list[str]]) -> None:
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::rowCount``."""
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::columnCount``."""
        return 0 if parent.isValid() else len(self._headers)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Implements ``QAbstractItemModel::data``."""
        if index.isValid() and role == Qt.ItemDataRole.DisplayRole:
            return self._rows[index.row()][index.column()]
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Implements ``QAbstractItemModel::headerData``."""
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self._headers[section] if 0 <= section < len(self._headers) else None
        return None


class Sparkline(QWidget):
    """Weekly agreement (0..1) as a line; the trend at a glance, the numbers are in the tables."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.values: list[float] = []
        self.setMinimumHeight(48)
        self.setAccessibleName("Agreement per week")

    def set_values(self, values: list[float]) -> None:
        self.values = values
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        """Implements ``QWidget::paintEvent``."""
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        w, h = self.width() - 8, self.height() - 8
        if len(self.values) == 1:
            y = 4 + h * (1 - self.values[0])
            painter.setBrush(QColor("#2563eb"))
            painter.drawEllipse(QPointF(4 + w / 2, y), 3, 3)
        elif self.values:
            step = w / (len(self.values) - 1)
            points = [QPointF(4 + i * step, 4 + h * (1 - v)) for i, v in enumerate(self.values)]
            painter.setPen(QPen(QColor("#2563eb"), 2))
            painter.drawPolyline(points)
        painter.end()


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


class CalibrationView(QWidget):
    """Filters, the matrix heatmap, kappa, agreement tables and the weekly sparkline."""

    sig_loaded = Signal()
    """New figures are shown (after each refresh)."""

    def __init__(self, ops: CoreOps, source: Source, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Calibration — how far to trust the validator")
        self._ops = ops
        self._source = source
        self.calibration: Calibration | None = None
        self.model_edit = QLineEdit(self)
        self.model_edit.setPlaceholderText("any validator model")
        self.category_combo = QComboBox(self)
        self.category_combo.addItem("any category", None)
        for c in FailureCategory:
            self.category_combo.addItem(c.value.replace("_", " "), c.value)
        self.refresh_button = QPushButton("Refresh", self)
        self.refresh_button.clicked.connect(self.refresh)
        self.summary = QLabel("Computing…", self)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.matrix = MatrixModel(self)
        self.by_category = RowsModel(["category", "decided", "agreement", "kappa"], self)
        self.by_model = RowsModel(["validator model", "decided", "agreement", "kappa"], self)
        self.warnings = RowsModel(["warning", "decided", "then overridden", "then revised", "share"], self)
        self.sparkline = Sparkline(self)
        filters = QHBoxLayout()
        filters.addWidget(QLabel("Validator model", self))
        filters.addWidget(self.model_edit)
        filters.addWidget(QLabel("Category", self))
        filters.addWidget(self.category_combo)
        filters.addWidget(self.refresh_button)
        filters.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(filters)
        layout.addWidget(self.summary)
        tables = QHBoxLayout()
        for model in (self.matrix, self.by_category, self.by_model, self.warnings):
            view = QTableView(self)
            view.setModel(model)
            header = view.horizontalHeader()
            header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
            if model is self.matrix:
                layout.addWidget(view, 1)  # the heatmap gets the full width
            else:
                tables.addWidget(view)
        layout.addLayout(tables, 1)
        layout.addWidget(QLabel("Agreement per week", self))
        layout.addWidget(self.sparkline)

    def current_filter(self) -> CalibrationFilter:
        model = self.model_edit.text().strip() or None
        return CalibrationFilter(validator_model=model, category=self.category_combo.currentData())

    def refresh(self) -> None:
        """Compute the figures for the current filter off the GUI's way; show them when done."""
        self.refresh_button.setEnabled(False)
        self.summary.setText("Computing…")

        def failed(_exc: BaseException) -> bool:
            self.refresh_button.setEnabled(True)
            self.summary.setText("The figures could not be computed.")
            return False  # CoreOps shows the reason, as for every operation

        self._ops.run(
            self._source(self.current_filter()), what="Computing calibration", on_done=self.show_calibration,
            on_error=failed,
        )  # fmt: skip

    def show_calibration(self, cal: Calibration) -> None:
        self.calibration = cal
        self.refresh_button.setEnabled(True)
        self.summary.setText(
            f"{cal.n} decided attempts · Cohen's kappa {_num(cal.kappa)} · agreement {_num(cal.agreement)}"
            " (validator accepted ⇔ analyst satisfied)"
        )
        self.matrix.set_matrix(cal.matrix)
        self.by_category.set_rows(
            [[k, str(v.n), _num(v.rate), _num(v.kappa)] for k, v in cal.by_category.items()]
        )
        self.by_model.set_rows([[k, str(v.n), _num(v.rate), _num(v.kappa)] for k, v in cal.by_model.items()])
        self.warnings.set_rows(
            [
                [
                    w.code,
                    str(w.decided),
                    str(w.overridden),
                    str(w.revised),
                    f"{w.override_or_revise_rate:.0%}",
                ]
                for w in cal.warnings
            ]
        )
        self.sparkline.set_values([v.rate for v in cal.weekly.values() if v.rate is not None])
        self.sig_loaded.emit()


__all__ = ["CalibrationView", "MatrixModel", "Sparkline"]


def add_calibration_action(window: Any, menu: Any) -> None:
    """Review → Calibration…: one window per main window, refreshed each time it is opened."""
    from PySide6.QtGui import QAction

    act = QAction("&Calibration…", window)
    act.setToolTip("How far the validator agrees with analysts' final decisions")

    def open_view() -> None:
        from core.calibration import calibrate

        view = getattr(window, "calibration_view", None)
        if view is None:
            view = CalibrationView(window.ops, lambda f: calibrate(window.workspace.store, f))
            view.setWindowFlag(Qt.WindowType.Window)
            view.setParent(window, Qt.WindowType.Window)
            view.resize(1000, 520)
            window.calibration_view = view
        view.show()
        view.raise_()
        view.refresh()

    act.triggered.connect(open_view)
    menu.addAction(act)
    window.act_calibration = act
