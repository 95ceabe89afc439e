"""Search everywhere: a panel (Ctrl+Shift+F) over titles, task text, answers, evidence, validator
issues and notes, with filters, saved views, and hits that open where they matched.

The panel asks core's ``SearchService`` (the same one ``evidence-desk search`` uses) through the
window's ``CoreOps``, so the query runs on the asyncio loop and the GUI thread only paints.
Everything a hit shows (titles, passages from tool results) is plain text: the model returns
strings and the view never interprets them as markup; matches are shown between « ».

Activating a hit selects its task; once the dossier is on screen the attempt is chosen and the
matched passage is opened with the match selected (evidence: the item, with the find bar on the
searched words; answer: the answer text; notes: the History tab).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QDate, QModelIndex, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDateEdit,
    QDockWidget,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.domain.status import TaskStatus, ValidationOutcome
from core.domain.validation import FailureCategory
from core.search.index import SEGMENT_CHARS, DocKind
from core.search.query import SearchCursor, SearchFilters, SearchHit, SearchPage, SearchQuery, SearchService
from core.search.views import SavedView, list_views, save_view
from desktop.models.search_hits import SearchHitsModel
from desktop.widgets.find_bar import find_spans
from desktop.widgets.plain import PlainToolTipDelegate, plain_label

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

__all__ = ["SearchPanel", "install_search", "open_hit"]

_NO_DATE = QDate(2000, 1, 1)


def _combo(parent: QWidget, tip: str, values: list[str], any_text: str) -> QComboBox:
    box = QComboBox(parent)
    box.addItem(any_text, None)
    for v in values:
        box.addItem(v.replace("_", " "), v)
    box.setToolTip(tip)
    return box


def _date(parent: QWidget, tip: str) -> QDateEdit:
    edit = QDateEdit(parent)
    edit.setCalendarPopup(True)
    edit.setMinimumDate(_NO_DATE)
    edit.setSpecialValueText(tip)  # shown while the date is the minimum: no bound
    edit.setDisplayFormat("yyyy-MM-dd")
    edit.setDate(_NO_DATE)
    edit.setToolTip(f"{tip} (passages dated from this day; clear by choosing 2000-01-01)")
    return edit


def _score(parent: QWidget, tip: str, default: float) -> QDoubleSpinBox:
    spin = QDoubleSpinBox(parent)
    spin.setRange(0.0, 1.0)
    spin.setSingleStep(0.1)
    spin.setDecimals(2)
    spin.setValue(default)
    spin.setToolTip(tip)
    spin.setPrefix(tip + " ")
    return spin


class SearchPanel(QWidget):
    """The search box, its filter row, saved views and the hits."""

    sig_searched = Signal(int)
    """A search (or its "more" page) finished with this many hits listed in all."""

    sig_hit_activated = Signal(object)
    """A hit was activated (Enter or double-click); carries the ``SearchHit``."""

    sig_views_changed = Signal()
    """The saved views list was reloaded."""

    sig_hit_shown = Signal(object)
    """An activated hit is on screen: its task's dossier, the passage opened (tests, screenshots)."""

    def __init__(self, search: SearchService, run: Callable[..., Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.search_service = search
        self._run = run  # CoreOps.run
        self._build_controls()
        self._build_table()
        self._lay_out()
        self._query: SearchQuery | None = None
        self._more: SearchCursor | None = None
        self.views: list[SavedView] = []
        self.dock: QDockWidget | None = None  # set by install_search
        self.open_panel: Callable[[], None] = lambda: None
        self.action: QAction | None = None

    def _build_controls(self) -> None:
        """Created in the order Tab should visit them (Qt's Tab order is creation order): the query,
        each filter left to right, then the buttons."""
        self.query_edit = QLineEdit(self)
        self.query_edit.setPlaceholderText('Search everything: words, "a phrase", prefix*  (Enter)')
        self.query_edit.setClearButtonEnabled(True)
        self.query_edit.returnPressed.connect(self.run_search)
        self.kind_box = _combo(self, "What to search", [k.value for k in DocKind], "everywhere")
        self.status_box = _combo(self, "Task status", [s.value for s in TaskStatus], "any status")
        self.outcome_box = _combo(
            self, "Validation outcome", [o.value for o in ValidationOutcome] + ["none"], "any outcome"
        )
        self.category_box = _combo(
            self, "Latest validator category", [c.value for c in FailureCategory], "any category"
        )
        self.min_score = _score(self, "score ≥", 0.0)
        self.max_score = _score(self, "score ≤", 1.0)
        self.reviewer_edit = QLineEdit(self)
        self.reviewer_edit.setPlaceholderText("reviewer")
        self.batch_edit = QLineEdit(self)
        self.batch_edit.setPlaceholderText("batch")
        self.since_edit = _date(self, "since")
        self.until_edit = _date(self, "until")
        self.views_box = QComboBox(self)
        self.views_box.setToolTip("Saved views: choose one to run it")
        self.views_box.addItem("Saved views…", None)
        self.views_box.activated.connect(self._on_view_chosen)
        self.save_button = QPushButton("Save view…", self)
        self.save_button.clicked.connect(self.ask_save_view)
        self.search_button = QPushButton("Search", self)
        self.search_button.clicked.connect(self.run_search)
        self.more_button = QPushButton("More", self)
        self.more_button.clicked.connect(self.run_more)
        self.more_button.hide()
        self.status_label = plain_label(parent=self)

    def _build_table(self) -> None:
        """One hit per row and one row selected, so Enter opens exactly one passage; the passage
        column takes the spare width, since it is what tells hits apart."""
        self.model = SearchHitsModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setItemDelegate(PlainToolTipDelegate(self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(0, 220)
        self.table.activated.connect(self._on_activated)
        self.table.doubleClicked.connect(self._on_activated)

    def _lay_out(self) -> None:
        """Where the controls sit is not their Tab order (``_build_controls`` sets that): the Search
        button sits beside the box it runs, yet Tab reaches it after the filters."""
        top = QHBoxLayout()
        top.addWidget(self.query_edit, 1)
        top.addWidget(self.search_button)
        top.addWidget(self.views_box)
        top.addWidget(self.save_button)
        filters = QHBoxLayout()
        for w in (
            self.kind_box,
            self.status_box,
            self.outcome_box,
            self.category_box,
            self.min_score,
            self.max_score,
            self.reviewer_edit,
            self.batch_edit,
            self.since_edit,
            self.until_edit,
        ):
            filters.addWidget(w)
        filters.addStretch(1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status_label, 1)
        bottom.addWidget(self.more_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addLayout(filters)
        layout.addWidget(self.table, 1)
        layout.addLayout(bottom)

    # ------------------------------------------------------------------ the query
    def filters(self) -> SearchFilters:
        def chosen(box: QComboBox) -> str | None:
            value = box.currentData()
            return str(value) if value else None

        def day(edit: QDateEdit) -> datetime | None:
            d = edit.date()
            return None if d == _NO_DATE else datetime(d.year(), d.month(), d.day(), tzinfo=UTC)

        kind = chosen(self.kind_box)
        lo, hi = self.min_score.value(), self.max_score.value()
        return SearchFilters(
            kinds=(DocKind(kind),) if kind else (),
            min_score=lo if lo > 0.0 else None,
            max_score=hi if hi < 1.0 else None,
            category=chosen(self.category_box),
            outcome=chosen(self.outcome_box),
            status=chosen(self.status_box),
            reviewer=self.reviewer_edit.text().strip() or None,
            batch_id=self.batch_edit.text().strip() or None,
            since=day(self.since_edit),
            until=day(self.until_edit),
        )

    def set_filters(self, flt: SearchFilters) -> None:
        def choose(box: QComboBox, value: str | None) -> None:
            box.setCurrentIndex(max(0, box.findData(value)) if value else 0)

        def set_day(edit: QDateEdit, value: datetime | None) -> None:
            edit.setDate(QDate(value.year, value.month, value.day) if value else _NO_DATE)

        choose(self.kind_box, flt.kinds[0].value if flt.kinds else None)
        choose(self.status_box, flt.status)
        choose(self.outcome_box, flt.outcome)
        choose(self.category_box, flt.category)
        self.min_score.setValue(flt.min_score if flt.min_score is not None else 0.0)
        self.max_score.setValue(flt.max_score if flt.max_score is not None else 1.0)
        self.reviewer_edit.setText(flt.reviewer or "")
        self.batch_edit.setText(flt.batch_id or "")
        set_day(self.since_edit, flt.since)
        set_day(self.until_edit, flt.until)

    def run_search(self) -> None:
        text = self.query_edit.text()
        if not text.strip():
            self.status_label.setText("Type a word or a quoted phrase to search for.")
            return
        self._query = SearchQuery(text=text, filters=self.filters())
        self.status_label.setText("Searching…")
        self._ask(self._query, append=False)

    def run_more(self) -> None:
        if self._query is None or self._more is None:
            return
        self._ask(self._query.model_copy(update={"after": self._more}), append=True)

    def _ask(self, query: SearchQuery, *, append: bool) -> None:
        def done(page: SearchPage) -> None:
            self.model.set_hits(page.hits, append=append)
            self._more = page.more
            self.more_button.setVisible(page.more is not None)
            n = len(self.model.hits)
            self.status_label.setText(
                ("no hits" if n == 0 else f"{n} hit{'s' if n != 1 else ''}")
                + (" (more below)" if page.more else "")
            )
            if not append and n:
                self.table.selectRow(0)
            self.sig_searched.emit(n)

        def failed(exc: BaseException) -> bool:
            if isinstance(exc, ValueError):  # a query core cannot ask: say so here, one line
                self.status_label.setText(str(exc))
                return True
            return False

        self._run(self.search_service.search(query), what="Searching", on_done=done, on_error=failed)

    def _on_activated(self, index: QModelIndex) -> None:
        hit = self.model.hit(index.row())
        if hit is not None:
            self.sig_hit_activated.emit(hit)

    # ------------------------------------------------------------------ saved views
    def reload_views(self) -> None:
        def done(views: list[SavedView]) -> None:
            self.views = views
            self.views_box.clear()
            self.views_box.addItem("Saved views…", None)
            for v in views:
                self.views_box.addItem(v.name, v.name)
            self.sig_views_changed.emit()

        self._run(list_views(self.search_service.store), what="Loading saved views", on_done=done)

    def save_current_view(self, name: str) -> None:
        view = SavedView(name=name, text=self.query_edit.text(), filters=self.filters())

        def failed(exc: BaseException) -> bool:
            if isinstance(exc, ValueError):
                self.status_label.setText(str(exc))
                return True
            return False

        def done(saved: SavedView) -> None:
            self.status_label.setText(f"Saved view {saved.name!r}.")
            self.reload_views()

        self._run(
            save_view(self.search_service.store, view), what="Saving the view", on_done=done, on_error=failed
        )

    def ask_save_view(self) -> None:
        name, ok = QInputDialog.getText(self, "Save view", "Name of this search:")
        if ok:
            self.save_current_view(name)

    def run_view(self, name: str) -> bool:
        for v in self.views:
            if v.name == name:
                self.query_edit.setText(v.text)
                self.set_filters(v.filters)
                self.run_search()
                return True
        return False

    def _on_view_chosen(self, position: int) -> None:
        name = self.views_box.itemData(position)
        if name:
            self.run_view(str(name))


def open_hit(host: DeskHost, panel: SearchPanel, hit: SearchHit) -> None:
    """Select the hit's task; when its dossier is on screen, open the passage with the match selected."""
    detail = host.detail

    def show() -> None:
        detail.tabs.setCurrentIndex(0)
        if hit.attempt_index is not None:
            with suppress(ValueError):  # the attempt is gone from the dossier: show the task as it is
                detail.select_attempt(hit.attempt_index)
        term = hit.terms[0] if hit.terms else ""
        after = hit.segment * SEGMENT_CHARS
        if hit.kind == DocKind.EVIDENCE and detail.evidence_view.show_match(hit.ref, term, after):
            pass  # a paged item: core finds the match and opens its page
        elif hit.kind == DocKind.EVIDENCE and detail.evidence_view.select_evidence(hit.ref):
            viewer = detail.evidence_view.viewer
            spans = find_spans(viewer.text(), term)
            chosen = next((i for i, s in enumerate(spans) if s[0] >= after), 0)
            bar = viewer.find_bar
            bar.open_bar(term)
            for _ in range(chosen):
                bar.find_next()
        elif hit.kind == DocKind.ANSWER:
            detail.answer_pane.mark(term)  # scrolled into view and marked, as an evidence hit is
        elif hit.kind == DocKind.NOTE:
            detail.tabs.setCurrentIndex(1)
        panel.sig_hit_shown.emit(hit)

    dossier = detail.dossier
    if host.queue.selected_task_id == hit.task_id and dossier is not None and dossier.task.id == hit.task_id:
        show()
        return

    def shown(task_id: str) -> None:
        if task_id == hit.task_id:
            host.sig_dossier_shown.disconnect(shown)
            show()

    host.sig_dossier_shown.connect(shown)
    if not host.queue.select_task(hit.task_id):
        host.sig_dossier_shown.disconnect(shown)
        host.show_info(
            f"“{hit.title}” is not among the queue's listed tasks; clear the queue filter and open it again."
        )


def install_search(host: DeskHost) -> SearchPanel:
    """The search panel as a dock under the window (hidden until Ctrl+Shift+F), its action and menu entry."""
    window = host.widget
    panel = SearchPanel(SearchService(host.services.workspace.store), host.ops.run, window)
    dock = QDockWidget("Search", window)
    dock.setObjectName("SearchDock")
    dock.setWidget(panel)
    dock.hide()
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)

    def open_panel() -> None:
        if not dock.isVisible():
            panel.reload_views()
        dock.show()
        dock.raise_()
        window.resizeDocks([dock], [max(180, window.height() // 4)], Qt.Orientation.Vertical)
        panel.query_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        panel.query_edit.selectAll()

    act = QAction("Search everything…", window)
    act.setShortcut(QKeySequence("Ctrl+Shift+F"))
    act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    act.setToolTip("Search titles, task text, answers, evidence, issues and notes (Ctrl+Shift+F)")
    act.triggered.connect(lambda _checked=False: open_panel())
    window.addAction(act)
    host.menu("Review").addAction(act)
    panel.sig_hit_activated.connect(lambda hit: open_hit(host, panel, hit))
    panel.dock = dock
    panel.open_panel = open_panel
    panel.action = act
    return panel
