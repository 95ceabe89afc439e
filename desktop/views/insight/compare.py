"""The Compare validators window: the live validator and a replayed candidate side by side.

The figures are ``core.judge.compare``'s (the same ones ``evidence-desk compare-validators``
prints), computed by a coroutine the window is handed and run through ``CoreOps``. Each side's
agreement with the analysts, its 95% interval, errors, cost and latency per verdict sit in two
columns; McNemar's test below them; then the cases where the verdicts differ, in three tables
(candidate right, current right, both wrong). Activating a case shows both verdicts side by side
and opens the task in the desk.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from desktop.models.rows_model import RowsModel
from desktop.ops import CoreOps

if TYPE_CHECKING:  # the judge's modules load when the window is first opened, not at the desk's start
    from core.judge.compare import Comparison, DifferingCase, SideFigures
    from desktop.views.host import DeskHost

Source = Callable[[str, str], Coroutine[Any, Any, "Comparison"]]
Choices = Callable[[], Coroutine[Any, Any, list[str]]]
GROUPS = (
    ("candidate_right", "Candidate right"),
    ("current_right", "Current right"),
    ("both_wrong", "Both wrong"),
)


def case_cell(row: list[str], column: int, role: int) -> Any:
    """Cells of a differing case: words left-aligned, the attempt number right; the title's full
    text as its tooltip (it is elided to fit)."""
    if role == Qt.ItemDataRole.DisplayRole:
        return row[column]
    if role == Qt.ItemDataRole.ToolTipRole and column == 2:
        return row[2]
    if role == Qt.ItemDataRole.TextAlignmentRole:
        return int(Qt.AlignmentFlag.AlignVCenter) | int(
            Qt.AlignmentFlag.AlignRight if column == 1 else Qt.AlignmentFlag.AlignLeft
        )
    return None


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def side_html(title: str, s: SideFigures) -> str:
    interval = f"{_num(s.interval[0])} – {_num(s.interval[1])}" if s.interval else "–"
    rows = [
        ("agreement with analysts", f"<b>{_num(s.agreement)}</b> ({s.agree} of {s.judged})"),
        ("95% interval (Wilson)", interval),
        ("validator errors", str(s.errors)),
        ("cost per verdict", "–" if s.cost_usd_per_verdict is None else f"${s.cost_usd_per_verdict:.5f}"),
        ("latency per verdict", f"{_num(s.latency_s_per_verdict, 2)} s"),
    ]
    cells = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return f"<h3>{html.escape(title)}: {html.escape(s.name)}</h3><p><i>{html.escape(s.source)}</i></p><table>{cells}</table>"


def verdict_html(title: str, status: str, score: float | None, issues: list[str]) -> str:
    items = "".join(f"<li>{html.escape(i)}</li>" for i in issues) or "<li><i>no issues</i></li>"
    return f"<h3>{html.escape(title)}</h3><p><b>{html.escape(status)}</b> · score {_num(score, 2)}</p><ul>{items}</ul>"


class CompareView(QWidget):
    """Choosers for the two validators, their figures side by side, the differing cases."""

    sig_loaded = Signal()
    """A comparison is shown."""
    sig_case_activated = Signal(str)
    """A differing case was activated: the task's id (the desk opens it)."""

    def __init__(self, ops: CoreOps, source: Source, choices: Choices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare validators — live against a replayed candidate")
        self._ops, self._source, self._choices = ops, source, choices
        self.comparison: Comparison | None = None
        self.current_combo, self.candidate_combo = QComboBox(self), QComboBox(self)
        for combo in (self.current_combo, self.candidate_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.compare_button = QPushButton("Compare", self)
        self.compare_button.clicked.connect(self.refresh)
        self.current_pane, self.candidate_pane = QTextBrowser(self), QTextBrowser(self)
        self.mcnemar = QLabel("Choose two validators.", self)
        self.mcnemar.setWordWrap(True)
        self.tabs = QTabWidget(self)
        headers = ["task", "#", "title", "analyst", "current", "candidate"]
        self.groups: dict[str, RowsModel[list[str]]] = {}
        self.cases: dict[str, list[DifferingCase]] = {}
        for key, label in GROUPS:
            model: RowsModel[list[str]] = RowsModel(headers, case_cell, self)
            view = QTableView(self)
            view.setModel(model)
            view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
            view.verticalHeader().hide()
            view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
            view.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
            view.activated.connect(lambda index, k=key: self.activate(k, index.row()))
            view.clicked.connect(lambda index, k=key: self.activate(k, index.row()))
            self.groups[key] = model
            self.tabs.addTab(view, label)
        self.left_verdict, self.right_verdict = QTextBrowser(self), QTextBrowser(self)
        self._lay_out()

    def _lay_out(self) -> None:
        choose = QHBoxLayout()
        choose.addWidget(QLabel("Current", self))
        choose.addWidget(self.current_combo)
        choose.addWidget(QLabel("Candidate", self))
        choose.addWidget(self.candidate_combo)
        choose.addWidget(self.compare_button)
        choose.addStretch(1)
        sides = QHBoxLayout()
        sides.addWidget(self.current_pane)
        sides.addWidget(self.candidate_pane)
        verdicts = QHBoxLayout()
        verdicts.addWidget(self.left_verdict)
        verdicts.addWidget(self.right_verdict)
        layout = QVBoxLayout(self)
        layout.addLayout(choose)
        layout.addLayout(sides, 2)
        layout.addWidget(self.mcnemar)
        layout.addWidget(self.tabs, 3)
        layout.addWidget(QLabel("The activated case, both verdicts:", self))
        layout.addLayout(verdicts, 2)

    def load_choices(self) -> None:
        self._ops.run(self._choices(), what="Listing replays", on_done=self.set_choices)

    def set_choices(self, names: list[str]) -> None:
        """'live' and every replay; the newest replay is the default candidate."""
        for combo in (self.current_combo, self.candidate_combo):
            chosen = combo.currentText()
            combo.clear()
            combo.addItems(names)
            if chosen:
                combo.setCurrentIndex(max(0, combo.findText(chosen)))
        if not self.candidate_combo.currentText() or self.candidate_combo.currentText() == "live":
            self.candidate_combo.setCurrentIndex(len(names) - 1)

    def refresh(self) -> None:
        current, candidate = self.current_combo.currentText(), self.candidate_combo.currentText()
        if not current or not candidate:
            return
        self.compare_button.setEnabled(False)
        self.mcnemar.setText("Computing…")

        def failed(_exc: BaseException) -> bool:
            self.compare_button.setEnabled(True)
            self.mcnemar.setText("The comparison could not be computed.")
            return False

        self._ops.run(
            self._source(current, candidate), what="Comparing validators", on_done=self.show_comparison,
            on_error=failed,
        )  # fmt: skip

    def show_comparison(self, c: Comparison) -> None:
        self.comparison = c
        self.compare_button.setEnabled(True)
        self.current_pane.setHtml(side_html("Current", c.current))
        self.candidate_pane.setHtml(side_html("Candidate", c.candidate))
        m = c.mcnemar
        self.mcnemar.setText(
            f"{c.paired} decided attempts judged by both · McNemar: current right only {m.b}, candidate "
            f"right only {m.c}; statistic {_num(m.statistic)}, p = {_num(m.p_value, 4)} ({m.method})"
        )
        for index, (key, label) in enumerate(GROUPS):
            cases: list[DifferingCase] = getattr(c, key)
            self.cases[key] = cases
            self.groups[key].set_rows(
                [
                    [
                        x.task_id,
                        str(x.attempt_index),
                        x.title,
                        x.analyst,
                        x.current_status,
                        x.candidate_status,
                    ]
                    for x in cases
                ]
            )
            self.tabs.setTabText(index, f"{label} ({len(cases)})")
        self.sig_loaded.emit()

    def activate(self, group: str, row: int) -> None:
        """Show the case's two verdicts side by side and ask the desk to open its task."""
        if not 0 <= row < len(self.cases.get(group, [])):
            return
        x = self.cases[group][row]
        self.left_verdict.setHtml(
            verdict_html("Current", x.current_status, x.current_score, x.current_issues)
        )
        self.right_verdict.setHtml(
            verdict_html("Candidate", x.candidate_status, x.candidate_score, x.candidate_issues)
        )
        self.sig_case_activated.emit(x.task_id)


class CompareMenuEntry:
    """Review → Compare validators…: one window per desk, made when first opened."""

    def __init__(self, host: DeskHost) -> None:
        self.host = host
        self.view: CompareView | None = None
        self.action = QAction("Compare &validators…", host.widget)
        self.action.setToolTip("The live validator against a replayed candidate, on the analysts' decisions")
        self.action.triggered.connect(lambda _checked=False: self.open())
        host.menu("Review").addAction(self.action)

    def open(self) -> CompareView:
        from core.judge.compare import compare_validators, replay_names
        from core.validation.workspace_templates import workspace_templates

        view = self.view
        if view is None:
            workspace = self.host.services.workspace

            async def source(current: str, candidate: str) -> Comparison:
                base = await workspace_templates(workspace.store)
                return await compare_validators(workspace.store, workspace.settings, current, candidate, base)

            view = CompareView(self.host.ops, source, lambda: replay_names(workspace.store))
            view.setWindowFlag(Qt.WindowType.Window)
            view.setParent(self.host.widget, Qt.WindowType.Window)
            view.resize(1100, 760)
            view.sig_case_activated.connect(self.host.load_detail)
            self.view = view
        view.show()
        view.raise_()
        view.load_choices()
        return view


__all__ = ["CompareMenuEntry", "CompareView", "side_html", "verdict_html"]
