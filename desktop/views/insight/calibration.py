"""The Calibration window: how far the validator agrees with the analysts' final decisions.

The figures come from ``core.calibration`` (the same ones ``evidence-desk calibration`` prints),
computed by a coroutine the window is handed, run through ``CoreOps``; the desk hands it one that
computes in a worker thread (``calibration_worker``), so neither the database work nor folding
100,000 decisions blocks painting. pyqtgraph is not installed and QtCharts is not needed for this: the confusion
matrix is a ``QTableView`` heatmap and the weekly trend a small ``QPainter`` sparkline.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QPointF, Qt, Signal
from PySide6.QtGui import QAction, QColor, QPainter, QPaintEvent, QPen
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

from core.calibration import DECISIONS, Calibration, CalibrationFilter, judgement_lines, rates_lines
from core.domain.agreement import Rate
from core.domain.validation import FailureCategory
from desktop.models.calibration_cells import CELL_ROLE, CELL_WORDS, CellsModel
from desktop.models.calibration_matrix import MatrixModel
from desktop.models.rows_model import RowsModel, text_cell
from desktop.ops import CoreOps
from desktop.views.insight.calibration_cases import CasesFilter
from desktop.views.insight.calibration_worker import CalibrationWorker

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

Source = Callable[[CalibrationFilter], Coroutine[Any, Any, Calibration]]
WINDOW_SIZE = (
    1120,
    820,
)  # the size it opens with: every table (versions, citations too) without a scroll bar
Batches = Callable[[], Coroutine[Any, Any, list[tuple[str, str]]]]


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


def _rate(r: Rate) -> str:
    return "–" if r.value is None else f"{r.value:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"


class CalibrationView(QWidget):
    """Filters, the 2x2 with its error rates, the matrix heatmap, agreement tables and the trend.

    Every count and rate is a click away from its cases: ``sig_cases`` carries the cell's words
    and task ids, and the desk narrows the queue to them (``calibration_cases.CasesFilter``).
    """

    sig_loaded = Signal()
    """New figures are shown (after each refresh)."""
    sig_cases = Signal(str, list)
    """A cell or rate was clicked: (what the cell is, in words; its task ids)."""

    def __init__(
        self, ops: CoreOps, source: Source, parent: QWidget | None = None, *, batches: Batches | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Calibration — how far to trust the validator")
        self._ops = ops
        self._source = source
        self._batches = batches
        self.calibration: Calibration | None = None
        self.batches_loaded = batches is None
        self.model_edit = QLineEdit(self)
        self.model_edit.setPlaceholderText("any validator model")
        hint = self.model_edit.fontMetrics().horizontalAdvance(self.model_edit.placeholderText())
        self.model_edit.setMinimumWidth(hint + 24)  # the placeholder is read whole, not "any validator mo…"
        self.version_edit = QLineEdit(self)
        self.version_edit.setPlaceholderText("any version")
        self.version_edit.setToolTip("Only verdicts by this validator version (an id or a unique prefix)")
        self.batch_combo = QComboBox(self)
        self.batch_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.batch_combo.addItem("any batch", None)
        self.batch_combo.setEnabled(batches is not None)
        self.category_combo = QComboBox(self)
        self.category_combo.addItem("any category", None)
        for c in FailureCategory:
            self.category_combo.addItem(c.value.replace("_", " "), c.value)
        self.reviewer_edit = QLineEdit(self)
        self.reviewer_edit.setPlaceholderText("any reviewer")
        self.refresh_button = QPushButton("Refresh", self)
        self.refresh_button.clicked.connect(self.refresh)
        self.summary = QLabel("Computing…", self)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self._build_rates()
        self._build_models()
        self.sparkline = Sparkline(self)
        layout = QVBoxLayout(self)
        layout.addLayout(self._filter_row())
        layout.addWidget(self.summary)
        layout.addLayout(self._rates_row())
        tables = QHBoxLayout()
        self.tables: list[QTableView] = []
        lower = QHBoxLayout()
        for model in (
            self.matrix, self.by_category, self.by_model, self.warnings, self.by_version, self.citations,
        ):  # fmt: skip
            view = QTableView(self)
            view.setModel(model)
            view.setWordWrap(False)
            self.tables.append(view)
            header = view.horizontalHeader()
            if model is self.matrix:
                view.clicked.connect(self._matrix_clicked)
                view.setToolTip("Click a count to list its tasks in the queue")
                header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
                # Every validator status shows without a scroll bar: five rows are the whole point.
                view.setSizeAdjustPolicy(QTableView.SizeAdjustPolicy.AdjustToContents)
                view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
                layout.addWidget(view)  # the heatmap gets the full width
            else:
                # Figures take the width of their header; the name column takes the rest (and
                # elides a long model name, whose full text is its tooltip), so no header is cut.
                header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
                header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
                view.verticalHeader().hide()
                (lower if model in (self.by_version, self.citations) else tables).addWidget(view)
        layout.addLayout(tables, 1)
        layout.addLayout(lower, 1)
        layout.addWidget(QLabel("Agreement per week", self))
        layout.addWidget(self.sparkline)

    def _build_models(self) -> None:
        """The tables' models: matrix, agreement per category, model and version, warnings, citations."""
        self.matrix = MatrixModel(self)
        by_category = ["category", "decided", "agreement", "kappa"]
        by_model = ["validator model", "decided", "agreement", "kappa"]
        by_version = ["validator version", "decided", "agreement", "kappa"]
        self.by_category = RowsModel(by_category, text_cell, self, explained=by_category)
        self.by_model = RowsModel(by_model, text_cell, self, explained=by_model)
        self.by_version = RowsModel(
            by_version, text_cell, self,
            explained=["the validator version (unversioned: verdicts from before versions)", *by_version[1:]],
        )  # fmt: skip
        self.citations = RowsModel(
            ["citations by model", "version", "right", "wrong", "precision [95%]"],
            text_cell,
            self,
            explained=[
                "the validator model whose citations analysts marked",
                "its validator version",
                "citations marked right (the latest mark on each stands)",
                "citations marked wrong",
                "right of marked, with its Wilson 95% interval",
            ],
        )
        self.warnings = RowsModel(
            ["warning", "decided", "overridden", "revised", "share"],
            text_cell,
            self,
            explained=[
                "the verdict warning",
                "decided attempts whose verdict carried the warning",
                "of those, attempts the analyst overrode",
                "of those, attempts the analyst sent back for revision",
                "overridden or revised, of those decided",
            ],
        )

    def _filter_row(self) -> QHBoxLayout:
        filters = QHBoxLayout()
        for label, widget in (
            ("Validator model", self.model_edit),
            ("Version", self.version_edit),
            ("Category", self.category_combo),
            ("Batch", self.batch_combo),
            ("Reviewer", self.reviewer_edit),
        ):
            filters.addWidget(QLabel(label, self))
            filters.addWidget(widget)
        filters.addWidget(self.refresh_button)
        filters.addStretch(1)
        return filters

    def _build_rates(self) -> None:
        """The 2x2 with its error rates and the judgement lines; every count and rate clickable."""
        self.cells = CellsModel(self)
        self.cells_view = QTableView(self)
        self.cells_view.setModel(self.cells)
        self.cells_view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.cells_view.setSizeAdjustPolicy(QTableView.SizeAdjustPolicy.AdjustToContents)
        self.cells_view.clicked.connect(self._cell_clicked)
        self.false_accept = QPushButton("false accept –", self)
        self.false_reject = QPushButton("false reject –", self)
        for button, cell in ((self.false_accept, "false_accept"), (self.false_reject, "false_reject")):
            button.setFlat(True)
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            # Read as a link: a rate is a click away from its cases, like every count here.
            button.setStyleSheet(
                "text-align: left; color: #1d4ed8; text-decoration: underline; border: none;"
            )
            button.setToolTip(f"Click to list the {cell.replace('_', ' ')}s in the queue")
            button.clicked.connect(lambda _c=False, cell=cell: self.open_cases(cell, CELL_WORDS[cell]))
        self.stats = QLabel("", self)
        self.too_few = QLabel("", self)
        self.too_few.setStyleSheet("color: #b45309; font-weight: 600;")
        self.too_few.setWordWrap(True)
        self.judgements = QLabel("", self)
        self.judgements.setWordWrap(True)
        self.adjudicate = QPushButton("Adjudicate disagreements", self)
        self.adjudicate.setToolTip("Tasks where two reviewers decided differently: list them in the queue")
        self.adjudicate.clicked.connect(
            lambda: self.open_cases("analysts disagree", "analysts disagree (to adjudicate)")
        )
        self.adjudicate.hide()

    def _rates_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.addWidget(self.cells_view, 0, Qt.AlignmentFlag.AlignTop)
        words = QVBoxLayout()
        for w in (
            self.false_accept,
            self.false_reject,
            self.stats,
            self.too_few,
            self.judgements,
            self.adjudicate,
        ):
            words.addWidget(w)
        words.addStretch(1)
        row.addLayout(words, 1)
        return row

    def current_filter(self) -> CalibrationFilter:
        model = self.model_edit.text().strip() or None
        return CalibrationFilter(
            validator_model=model,
            validator_version=self.version_edit.text().strip() or None,
            category=self.category_combo.currentData(),
            batch_id=self.batch_combo.currentData(),
            reviewer=self.reviewer_edit.text().strip() or None,
        )

    def open_cases(self, cell: str, words: str) -> list[str]:
        """Announce a cell's cases (``sig_cases``); returns them (none before figures with cases)."""
        cal = self.calibration
        if cal is None:
            return []
        if cell == "analysts disagree":
            ids = list(cal.analysts.disagreements) if cal.analysts is not None else []
        else:
            ids = list((cal.cases or {}).get(cell, []))
        self.sig_cases.emit(words, ids)
        return ids

    def _cell_clicked(self, index: QModelIndex) -> None:
        cell = index.data(CELL_ROLE)
        if isinstance(cell, str):
            self.open_cases(cell, CELL_WORDS[cell])

    def _matrix_clicked(self, index: QModelIndex) -> None:
        status = self.matrix.headerData(index.row(), Qt.Orientation.Vertical)
        decision = DECISIONS[index.column()]
        if isinstance(status, str):
            key = f"{status.replace(' ', '_')}/{decision}"
            self.open_cases(key, f"validator {status} ∧ analyst {decision}")

    def refresh(self) -> None:
        """Compute the figures for the current filter off the GUI's way; show them when done."""
        self.refresh_button.setEnabled(False)
        self.summary.setText("Computing…")
        if self._batches is not None:  # batches come and go: the chooser is refilled each time
            self._ops.run(self._batches(), what="Listing batches", on_done=self.set_batches)

        def failed(_exc: BaseException) -> bool:
            self.refresh_button.setEnabled(True)
            self.summary.setText("The figures could not be computed.")
            return False  # CoreOps shows the reason, as for every operation

        self._ops.run(
            self._source(self.current_filter()), what="Computing calibration", on_done=self.show_calibration,
            on_error=failed,
        )  # fmt: skip

    def set_batches(self, batches: list[tuple[str, str]]) -> None:
        """Fill the chooser with (id, source file) pairs, keeping the chosen batch if it is still there."""
        chosen = self.batch_combo.currentData()
        self.batch_combo.blockSignals(True)
        self.batch_combo.clear()
        self.batch_combo.addItem("any batch", None)
        for batch_id, source in batches:
            self.batch_combo.addItem(f"{batch_id} ({Path(source).name or source})", batch_id)
            self.batch_combo.setItemData(self.batch_combo.count() - 1, source, Qt.ItemDataRole.ToolTipRole)
        self.batch_combo.setCurrentIndex(max(0, self.batch_combo.findData(chosen)))
        self.batch_combo.blockSignals(False)
        self.batches_loaded = True

    def show_calibration(self, cal: Calibration) -> None:
        self.calibration = cal
        self.refresh_button.setEnabled(True)
        self.summary.setText(
            f"{cal.n} decided attempts · Cohen's kappa {_num(cal.kappa)} · agreement {_num(cal.agreement)}"
            " (validator accepted ⇔ analyst satisfied)"
        )
        self._show_rates(cal)
        self.matrix.set_matrix(cal.matrix)
        self.by_category.set_rows(
            [[k, str(v.n), _num(v.rate), _num(v.kappa)] for k, v in cal.by_category.items()]
        )
        self.by_model.set_rows([[k, str(v.n), _num(v.rate), _num(v.kappa)] for k, v in cal.by_model.items()])
        self.by_version.set_rows(
            [[k, str(v.n), _num(v.rate), _num(v.kappa)] for k, v in cal.by_version.items()]
        )
        self.citations.set_rows(
            [
                [v.validator_model, v.validator_version, str(v.right), str(v.wrong), _rate(v.precision)]
                for v in (cal.citations.by_validator if cal.citations is not None else [])
            ]
        )
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

    def _show_rates(self, cal: Calibration) -> None:
        r = cal.rates
        self.cells.set_rates(r)
        view = self.cells_view  # two rows exactly: no blank space under them
        frame = 2 * view.frameWidth()
        view.setFixedHeight(
            view.horizontalHeader().sizeHint().height() + view.verticalHeader().length() + frame
        )
        if r is None:
            return
        lines = rates_lines(r)
        fa, fr = lines[0].split("   ")[:2]
        self.false_accept.setText(fa)
        self.false_reject.setText(fr)
        self.stats.setText(lines[1])
        self.too_few.setText(lines[2] if r.too_few else "")
        self.too_few.setVisible(r.too_few)
        words = [w.strip() for w in judgement_lines(cal) if w.strip()]
        self.judgements.setText("\n".join(words))
        self.judgements.setVisible(bool(words))
        disagree = cal.analysts.disagreements if cal.analysts is not None else []
        self.adjudicate.setText(f"Adjudicate {len(disagree)} disagreement{'s' if len(disagree) != 1 else ''}")
        self.adjudicate.setVisible(bool(disagree))


class CalibrationMenuEntry:
    """Review → Calibration…: one view per desk, made when first opened, refreshed each time.

    The desk holds this object (``window.calibration``); the view lives here, not on the window.
    """

    def __init__(self, host: DeskHost) -> None:
        self.host = host
        self.view: CalibrationView | None = None
        self.worker: CalibrationWorker | None = None
        self.cases = CasesFilter(host)
        self.action = QAction("&Calibration…", host.widget)
        self.action.setToolTip("How far the validator agrees with analysts' final decisions")
        self.action.triggered.connect(lambda _checked=False: self.open())
        host.menu("Review").addAction(self.action)

    def open(self) -> CalibrationView:
        from core.calibration import calibration_batches

        view = self.view
        if view is None:
            workspace = self.host.services.workspace
            self.worker = CalibrationWorker(workspace.store.url)  # off the GUI thread: it paints meanwhile
            view = CalibrationView(
                self.host.ops,
                self.worker.calibrate,
                batches=lambda: calibration_batches(workspace.store),
            )
            view.setWindowFlag(Qt.WindowType.Window)
            view.setParent(self.host.widget, Qt.WindowType.Window)
            view.resize(*WINDOW_SIZE)
            view.sig_cases.connect(lambda words, ids: self.cases.show(words, ids))
            self.view = view
        view.show()
        view.raise_()
        view.refresh()
        return view


__all__ = ["WINDOW_SIZE", "CalibrationMenuEntry", "CalibrationView", "Sparkline"]
