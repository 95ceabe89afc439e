"""The queue pane: filter bar over a tree of status groups.

The view owns presentation state only (expanded groups, the selected task id). It re-applies
both after every model reset, so typing in the filter or re-sorting does not lose the analyst's
place; live updates move rows with ``beginMoveRows`` and need nothing from here.
"""

from __future__ import annotations

from PySide6.QtCore import (
    QByteArray,
    QEvent,
    QItemSelectionModel,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QMenu,
    QStyleOptionViewItem,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from core.domain.queue import OutcomeFilter, QueueFilter
from core.domain.status import TaskStatus
from desktop.models.queue_model import (
    COL_ATTEMPTS,
    COL_CATEGORY,
    COL_OUTCOME,
    COL_SCORE,
    COL_STATUS,
    COL_TITLE,
    COL_UPDATED,
    COLUMNS,
    GROUP_KEY_ROLE,
    STATUS_ROLE,
    TASK_ID_ROLE,
    TASK_ROLE,
    TaskQueueModel,
)
from desktop.presentation import NEEDS_REVIEW_TEXT, OUTCOME_FILTER_LABELS, STATUS_COLOURS, STATUS_LABELS
from desktop.widgets.fit import FittingCombo
from desktop.widgets.plain import PlainToolTipDelegate

Index = QModelIndex | QPersistentModelIndex
DEFAULT_WIDTHS = (0, 112, 110, 44, 72, 30, 62)  # title, status, outcome, score, category, attempts, updated
HIDDEN_BY_DEFAULT = (COL_CATEGORY,)
TITLE_MIN = 160  # pixels: below this, titles elide to a few letters and tasks cannot be told apart
TITLE_SHARE = 0.45  # and, where the queue is wider, this share of it: the title tells tasks apart
PILL_PADDING = 20  # the pill's own 14 px of padding, its 2 px inset and 2 px to spare on each side


def status_column_width(metrics: QFontMetrics) -> int:
    """The Status column's least width: every status's pill whole in the desk's font.

    A fixed 112 px clipped "awaiting feedback" to "awaiting feed…" in the default font; the words
    are what the analyst acts on, so the column is measured, not guessed.
    """
    return max(metrics.horizontalAdvance(text) for text in STATUS_LABELS.values()) + PILL_PADDING


# When the queue is too narrow for a readable title, these columns give way, first one first; they
# come back in reverse order as room returns. Status stays: it is what the analyst acts on.
GIVE_WAY_ORDER = (COL_CATEGORY, COL_SCORE, COL_ATTEMPTS, COL_UPDATED, COL_OUTCOME)


class TaskRowDelegate(PlainToolTipDelegate):
    """Plain-text tooltips for task rows; the title's tooltip is the full title, then the task."""

    def tooltip_text(self, index: Index) -> str:
        """The full title first: the column elides it in the middle at narrow widths."""
        text = super().tooltip_text(index)
        task = index.data(TASK_ROLE)
        if index.column() == COL_TITLE and task is not None:
            return f"{task.title}\n\n{text}" if text and text != task.title else task.title
        return text


class StatusBadgeDelegate(TaskRowDelegate):
    """Paints the status as a coloured pill so statuses read at a glance.

    Each pill is drawn once into a pixmap and reused: drawing it per row per paint (colours
    parsed, text measured and elided, an antialiased shape) was half the CPU of repainting the
    queue (~9 of ~20 ms at the default size), and a keystroke repaints every visible row.
    """

    PILLS_KEPT = 256  # distinct pills remembered (statuses x progress labels x column widths)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._pills: dict[tuple[str, str, int, int, float, str], QPixmap] = {}

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        status = index.data(STATUS_ROLE)
        if status is None:
            super().paint(painter, option, index)
            return
        self.initStyleOption(option, index)
        text = option.text
        option.text = ""
        widget = option.widget
        style = widget.style() if widget is not None else None
        if style is not None:
            style.drawControl(style.ControlElement.CE_ItemViewItem, option, painter, widget)
        rect: QRect = option.rect
        ratio = painter.device().devicePixelRatioF() if painter.device() is not None else 1.0
        key = (status, text, rect.width(), rect.height(), ratio, option.font.key())
        pill = self._pills.get(key)
        if pill is None:
            if len(self._pills) >= self.PILLS_KEPT:
                self._pills.clear()
            pill = self._pills[key] = _draw_pill(status, text, option, ratio)
        painter.drawPixmap(rect.left() + 2, rect.top() + 3, pill)


def _draw_pill(status: str, text: str, option: QStyleOptionViewItem, ratio: float) -> QPixmap:
    """One status pill, as ``StatusBadgeDelegate`` shows it in a cell of ``option.rect``'s size."""
    metrics = option.fontMetrics
    rect: QRect = option.rect
    width = max(1, min(metrics.horizontalAdvance(text) + 14, rect.width() - 4))
    height = max(1, rect.height() - 6)
    pixmap = QPixmap(round(width * ratio), round(height * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(option.font)
        pill = QRect(0, 0, width, height)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(STATUS_COLOURS[TaskStatus(status)]))
        painter.drawRoundedRect(pill, height / 2, height / 2)
        painter.setPen(QColor("#ffffff") if status != TaskStatus.NEEDS_REVIEW else QColor(NEEDS_REVIEW_TEXT))
        elided = metrics.elidedText(text, Qt.TextElideMode.ElideRight, width - 10)
        painter.drawText(pill, int(Qt.AlignmentFlag.AlignCenter), elided)
    finally:
        painter.end()
    return pixmap


class QueueTree(QTreeView):
    """The queue's tree; type-ahead searches task titles only and never lands on a group header.

    Qt's own ``keyboardSearch`` matches any row's text, so typing "n" jumped to the "Needs
    review" header, which deselected the task and disabled S, R and A.

    The Title column never gets narrower than ``TITLE_MIN`` (nor, in a wide queue, than
    ``TITLE_SHARE`` of it): when the tree narrows, the other
    columns give way (``GIVE_WAY_ORDER``) and come back as it widens. Columns hidden that way
    are not the analyst's choice, so ``header_state`` saves them as shown.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.given_way: list[int] = []
        self._given_widths: dict[int, int] = {}

    def viewportEvent(self, event: QEvent) -> bool:
        """QAbstractItemView.viewportEvent: a resized viewport (the tree's, or a scroll bar coming or
        going) lets columns give way to, or return from, the title."""
        handled = super().viewportEvent(event)
        if event.type() == QEvent.Type.Resize:
            self.fit_columns()
        return handled

    def fit_columns(self) -> None:
        header = self.header()
        width = self.viewport().width()
        if width <= 0:
            return

        status_width = status_column_width(self.fontMetrics())
        if not header.isSectionHidden(COL_STATUS) and header.sectionSize(COL_STATUS) < status_width:
            header.resizeSection(COL_STATUS, status_width)  # a saved or default width that clips

        def others() -> int:
            shown = (c for c in range(header.count()) if c != COL_TITLE and not header.isSectionHidden(c))
            return sum(header.sectionSize(c) for c in shown)

        wanted = max(TITLE_MIN, int(width * TITLE_SHARE))
        for col in GIVE_WAY_ORDER:
            if width - others() >= wanted:
                break
            if not header.isSectionHidden(col):
                self._given_widths[col] = header.sectionSize(col)  # a hidden section's size reads 0
                header.setSectionHidden(col, True)
                self.given_way.append(col)
        # Back in reverse order, with a little slack so a resize cannot make a column flicker.
        while self.given_way and width - others() - self._given_widths[self.given_way[-1]] >= wanted + 24:
            header.setSectionHidden(self.given_way.pop(), False)

    def forget_given_way(self, col: int) -> None:
        """The analyst showed or hid ``col`` themself: it is theirs from now on."""
        if col in self.given_way:
            self.given_way.remove(col)

    def header_state(self) -> QByteArray:
        """The header's state with given-way columns shown: on a wider screen they are wanted."""
        header = self.header()
        given = list(self.given_way)
        for col in given:
            header.setSectionHidden(col, False)
        state = header.saveState()
        for col in given:
            header.setSectionHidden(col, True)
        return state

    def keyboardSearch(self, search: str) -> None:
        """QAbstractItemView.keyboardSearch: the next task whose title starts with ``search``."""
        model = self.model()
        if not search or model is None:
            return
        tasks: list[QModelIndex] = []
        for gi in range(model.rowCount()):
            group = model.index(gi, 0)
            if self.isExpanded(group):
                tasks.extend(model.index(r, COL_TITLE, group) for r in range(model.rowCount(group)))
        if not tasks:
            return
        current = self.currentIndex()
        start = next(
            (
                i
                for i, idx in enumerate(tasks)
                if current.isValid() and idx.row() == current.row() and idx.parent() == current.parent()
            ),
            -1,
        )
        # A one-letter search moves on from the current row; a longer one may stay on it.
        first = start + 1 if len(search) == 1 else max(start, 0)
        needle = search.casefold()
        for offset in range(len(tasks)):
            idx = tasks[(first + offset) % len(tasks)]
            if str(idx.data() or "").casefold().startswith(needle):
                self.selectionModel().setCurrentIndex(
                    idx.siblingAtColumn(0),
                    QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
                )
                self.scrollTo(idx)
                return


class QueueView(QWidget):
    sig_task_selected = Signal(object)
    """The selected task changed: its id, or None when nothing is selected."""

    def __init__(self, model: TaskQueueModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self._selected_id: str | None = None
        self._collapsed: set[str] = {"abandoned"}
        self._build_filter_bar()
        self._build_tree(model)
        self._lay_out()
        self._connect_filter()
        self._follow_resets(model)
        self._load_pages_in_sight(model)

    def _build_filter_bar(self) -> None:
        """Controls that narrow the queue; each change becomes a core query (``current_filter``),
        never a filter kept in the view."""
        self.filter_edit = QLineEdit(placeholderText="Filter tasks  ( / )")
        self.filter_edit.setClearButtonEnabled(True)
        # Only a click or / and Ctrl+F put the cursor here: a J typed after focus wandered in
        # (say, when the empty state's button disappeared) must move the selection, not filter.
        self.filter_edit.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.status_combo = FittingCombo()  # the whole choice where there is room, a few letters where not
        self.status_combo.addItem("All statuses", None)
        for status in TaskStatus:
            self.status_combo.addItem(STATUS_LABELS[status].capitalize(), status)
        self.outcome_combo = FittingCombo()
        for choice, label in OUTCOME_FILTER_LABELS.items():
            self.outcome_combo.addItem(label, choice)
        # The bar must not set the queue's minimum width: the combos shrink (eliding) as it narrows.
        self.filter_edit.setMinimumWidth(60)

    def _build_tree(self, model: TaskQueueModel) -> None:
        """The tree and its columns, sized so a task's title gets the room."""
        self.tree = QueueTree()
        self.tree.setObjectName("TaskQueue")
        self.tree.setModel(model)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(False)
        # Shift/Ctrl-click and Shift+Up/Down select several tasks for bulk work (desktop/views/queue/bulk.py
        # keeps group headers out of the selection); one selected task behaves as before.
        self.tree.setSelectionMode(QTreeView.SelectionMode.ExtendedSelection)
        self.tree.setSelectionBehavior(QTreeView.SelectionBehavior.SelectRows)
        self.tree.setItemDelegate(TaskRowDelegate(self.tree))
        self.tree.setItemDelegateForColumn(COL_STATUS, StatusBadgeDelegate(self.tree))
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # similar titles differ at the end
        self.tree.header().setSortIndicator(COL_UPDATED, Qt.SortOrder.DescendingOrder)
        self.tree.setSortingEnabled(True)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(COL_TITLE, QHeaderView.ResizeMode.Stretch)
        # The title is what tells two tasks apart: the other columns stay narrow and the category
        # (also in the verdict) starts hidden, so at the default window size a title keeps ~40
        # characters. The header's context menu shows or hides any column.
        for col, width in enumerate(DEFAULT_WIDTHS):
            if col != COL_TITLE:
                header.resizeSection(col, width)
        header.resizeSection(
            COL_STATUS, max(DEFAULT_WIDTHS[COL_STATUS], status_column_width(self.tree.fontMetrics()))
        )
        header.setMinimumSectionSize(30)
        for col in HIDDEN_BY_DEFAULT:
            header.setSectionHidden(col, True)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._column_menu)

    def _lay_out(self) -> None:
        """The filter bar over the tree; no right margin, the splitter handle is the gap."""
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.filter_edit, 1)
        bar.addWidget(self.status_combo)
        bar.addWidget(self.outcome_combo)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 0, 6)
        layout.addLayout(bar)
        layout.addWidget(self.tree, 1)

    def _connect_filter(self) -> None:
        """Typing waits for a pause before it filters (each filter is a query); a choice filters at once."""
        self._debounce = QTimer(self, singleShot=True, interval=120)
        self._debounce.timeout.connect(self.apply_filter)
        self.filter_edit.textChanged.connect(lambda _t: self._debounce.start())
        self.status_combo.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.outcome_combo.currentIndexChanged.connect(lambda _i: self.apply_filter())

    def _follow_resets(self, model: TaskQueueModel) -> None:
        """A reload must not lose the analyst's place: expanded groups and the selected task are kept."""
        self._resetting = False
        model.modelAboutToBeReset.connect(self._before_reset)
        model.sig_reloading.connect(self._before_reset)
        model.sig_refreshed.connect(self._after_reset)
        model.rowsInserted.connect(self._span_groups)
        self.tree.expanded.connect(lambda idx: self._collapsed.discard(idx.data(GROUP_KEY_ROLE)))
        self.tree.collapsed.connect(lambda idx: self._collapsed.add(idx.data(GROUP_KEY_ROLE)))
        selection = self.tree.selectionModel()
        selection.currentRowChanged.connect(self._on_current_changed)

    def _load_pages_in_sight(self, model: TaskQueueModel) -> None:
        """Pages load when the analyst can see a group's last loaded row, and only then: after a
        scroll, a resize, an expansion, a reload or a page that did not fill the view."""
        self._rows_check = QTimer(self, singleShot=True, interval=0)
        self._rows_check.timeout.connect(self._load_rows_in_view)
        # Signals carry arguments that QTimer.start(msec) must never receive: go through one slot.
        bar_v = self.tree.verticalScrollBar()
        bar_v.valueChanged.connect(self._schedule_rows_check)
        bar_v.rangeChanged.connect(self._schedule_rows_check)
        self.tree.expanded.connect(self._schedule_rows_check)
        model.sig_refreshed.connect(self._schedule_rows_check)
        model.sig_page_loaded.connect(self._schedule_rows_check)

    def _column_menu(self, pos: QPoint) -> None:
        header = self.tree.header()
        menu = QMenu(self)
        for col, (name, _sort) in enumerate(COLUMNS):
            if col == COL_TITLE:
                continue
            act = menu.addAction(name)
            act.setCheckable(True)
            act.setChecked(not header.isSectionHidden(col))
            act.toggled.connect(lambda on, c=col: self._choose_column(c, on))
        menu.popup(header.mapToGlobal(pos))

    def _choose_column(self, col: int, on: bool) -> None:
        self.tree.forget_given_way(col)
        self.tree.header().setSectionHidden(col, not on)
        self.tree.fit_columns()

    # ------------------------------------------------------------------ filter
    def current_filter(self) -> QueueFilter:
        return QueueFilter(
            text=self.filter_edit.text().strip(),
            status=self.status_combo.currentData(),
            outcome=self.outcome_combo.currentData() or OutcomeFilter.ANY,
            batch_id=self.model.filter.batch_id,  # set by the Batches pane (desktop/views/team/batches.py)
            task_ids=self.model.filter.task_ids,  # set by the Calibration window (insight/calibration_cases.py)
            cases_label=self.model.filter.cases_label,
        )

    def apply_filter(self) -> None:
        self._debounce.stop()
        flt = self.current_filter()
        if flt != self.model.filter:
            self.model.set_filter(flt)

    def focus_filter(self) -> None:
        self.filter_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter_edit.selectAll()

    # ------------------------------------------------------------------ selection
    @property
    def selected_task_id(self) -> str | None:
        return self._selected_id

    def selected_task_ids(self) -> list[str]:
        """The selected tasks' ids in queue order (group headers are never among them)."""
        rows = self.tree.selectionModel().selectedRows(0)
        ordered = sorted(rows, key=lambda i: (i.parent().row(), i.row()))
        return [tid for idx in ordered if (tid := idx.data(TASK_ID_ROLE)) is not None]

    def select_task(self, task_id: str) -> bool:
        index = self.model.index_of_task(task_id)
        if not index.isValid():
            return False
        self.tree.expand(index.parent())
        self.tree.selectionModel().setCurrentIndex(
            index,
            QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
        )
        self.tree.scrollTo(index)
        return True

    def select_next(self, step: int = 1) -> None:
        """J/K: move through task rows across groups, skipping group headers."""
        rows = self._visible_task_indexes()
        if not rows:
            return
        current = self.tree.currentIndex()
        current = current.siblingAtColumn(0) if current.isValid() else current
        positions = [i for i, idx in enumerate(rows) if idx == current]
        if not positions:
            target = rows[0] if step > 0 else rows[-1]
        else:
            target = rows[max(0, min(len(rows) - 1, positions[0] + step))]
        self.select_task(target.data(TASK_ID_ROLE))

    def next_needing_decision(self, after_id: str) -> str | None:
        """The task after ``after_id`` in queue order that waits for the analyst (wrapping round)."""
        rows = self._visible_task_indexes()
        ids = [idx.data(TASK_ID_ROLE) for idx in rows]
        start = ids.index(after_id) if after_id in ids else -1
        for offset in range(1, len(ids) + 1):
            idx = rows[(start + offset) % len(rows)]
            task = idx.data(TASK_ROLE)
            if (
                task is not None
                and task.id != after_id
                and task.status.requires_user_action
                and not task.read_only
            ):
                return str(task.id)
        return None

    def _visible_task_indexes(self) -> list[QModelIndex]:
        out: list[QModelIndex] = []
        for gi in range(self.model.rowCount()):
            group = self.model.index(gi, 0)
            if not self.tree.isExpanded(group):
                continue
            out.extend(self.model.index(r, 0, group) for r in range(self.model.rowCount(group)))
        return out

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._resetting:
            return
        task_id = current.data(TASK_ID_ROLE) if current.isValid() else None
        if task_id != self._selected_id:
            self._selected_id = task_id
            self.sig_task_selected.emit(task_id)

    @property
    def rows_check_pending(self) -> bool:
        """A check for rows to load is scheduled (tests wait for it to settle)."""
        return self._rows_check.isActive()

    def _schedule_rows_check(self, *_args: object) -> None:
        self._rows_check.start()

    def _load_rows_in_view(self) -> None:
        """Ask for the next page of every expanded group whose last loaded row is (nearly) on screen."""
        if self.model.reloading:  # its rows replace these; it schedules another check when it lands
            return
        reach = self.tree.viewport().height() * 2  # one screen of look-ahead below the view
        for gi in range(self.model.rowCount()):
            group = self.model.index(gi, 0)
            if not self.tree.isExpanded(group) or not self.model.has_more(gi):
                continue
            loaded = self.model.rowCount(group)
            last = self.model.index(loaded - 1, 0, group) if loaded else group
            rect = self.tree.visualRect(last)
            if rect.isValid() and rect.bottom() <= reach:
                self.model.request_more(gi)

    # ------------------------------------------------------------------ after a reset
    def _span_groups(self, parent: QModelIndex | None = None, *_args: object) -> None:
        """Group headers span the row; only new top-level rows (or a reset) can lack the span.

        Each call re-lays the tree out, so task rows arriving (pages, live updates) skip it.
        """
        if parent is not None and parent.isValid():
            return
        root = QModelIndex()
        for gi in range(self.model.rowCount()):
            if not self.tree.isFirstColumnSpanned(gi, root):
                self.tree.setFirstColumnSpanned(gi, root, True)

    def _before_reset(self) -> None:
        self._resetting = True

    def _after_reset(self) -> None:
        """After a reload: spans and expansion where they are missing, the selected task kept.

        A reload replaces rows in place (only the first one resets the model), so usually every
        group is spanned and expanded already and nothing here touches the tree; a selected
        task still listed stays selected (a reset lost it, and it is selected again).
        """
        self._resetting = False
        self._span_groups()
        for gi in range(self.model.rowCount()):
            group = self.model.index(gi, 0)
            expand = group.data(GROUP_KEY_ROLE) not in self._collapsed
            if self.tree.isExpanded(group) != expand:
                self.tree.setExpanded(group, expand)
        keep = self._selected_id
        if keep is None:
            return
        index = self.model.index_of_task(keep)
        selection = self.tree.selectionModel()
        if not index.isValid():
            self._selected_id = None  # before clearing: the slot then sees no change to announce
            selection.clearSelection()
            selection.clearCurrentIndex()  # Qt moved it to a neighbour the analyst never chose
            self.sig_task_selected.emit(None)
        elif selection.currentIndex().siblingAtColumn(0) != index or not selection.isRowSelected(
            index.row(), index.parent()
        ):
            self.select_task(keep)
        else:
            self.tree.scrollTo(index)  # still selected; in sight if the rows above it went


__all__ = ["COLUMNS", "QueueView", "StatusBadgeDelegate"]
