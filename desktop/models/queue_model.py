"""The task queue: status groups with task rows under them, loaded page by page from the store.

The model holds no business rules. Which status belongs to which group is presentation (the
order an analyst works through); what a status *allows* is asked of core elsewhere. Rows are
``TaskRecord`` values read from the store; every read is an async operation run through
``CoreOps``, so nothing here blocks painting:

* ``refresh()`` reads the counts and the first page of every group, then resets the model;
* ``fetchMore`` (the view calls it when the analyst scrolls to the end of a group) schedules the
  next page and appends it when it arrives;
* ``update_task()`` (called for core's ``task_changed``/``task_created`` events) re-reads one
  task and moves its row between groups with ``beginMoveRows``, so the view's selection and
  scroll position survive a live update.

Every async result carries the generation it was asked in; a result from before the latest
reset (a filter keystroke, a new sort) is dropped instead of being applied to the wrong rows.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFont, QIcon

from core.domain import TaskStatus, ValidationOutcome
from core.events import RunProgress
from core.store import Store, TaskRecord
from desktop.ops import CoreOps

Index = QModelIndex | QPersistentModelIndex

S = TaskStatus


@dataclass(frozen=True)
class GroupSpec:
    key: str
    title: str
    statuses: tuple[TaskStatus, ...]
    hint: str


GROUPS: tuple[GroupSpec, ...] = (
    GroupSpec(
        "needs_review", "Needs review", (S.NEEDS_REVIEW,), "delivered without the validator's endorsement"
    ),
    GroupSpec("awaiting_feedback", "Awaiting feedback", (S.AWAITING_FEEDBACK,), "accepted by the validator"),
    GroupSpec("needs_revision", "Needs revision", (S.NEEDS_REVISION,), "a new attempt is due"),
    GroupSpec("active", "Running and validating", (S.RUNNING, S.VALIDATING), "work in flight"),
    GroupSpec("open", "Open", (S.OPEN,), "not started"),
    GroupSpec("failed", "Failed", (S.FAILED,), "no usable answer"),
    GroupSpec("closed", "Closed", (S.CLOSED,), "the analyst was satisfied"),
    GroupSpec("abandoned", "Abandoned", (S.ABANDONED,), "the analyst gave up on it"),
)
GROUP_OF_STATUS: dict[TaskStatus, int] = {s: gi for gi, g in enumerate(GROUPS) for s in g.statuses}

STATUS_LABELS: dict[TaskStatus, str] = {
    S.OPEN: "open",
    S.RUNNING: "running",
    S.VALIDATING: "validating",
    S.AWAITING_FEEDBACK: "awaiting feedback",
    S.NEEDS_REVIEW: "needs review",
    S.NEEDS_REVISION: "needs revision",
    S.FAILED: "failed",
    S.CLOSED: "closed",
    S.ABANDONED: "abandoned",
}
OUTCOME_LABELS: dict[ValidationOutcome, str] = {
    ValidationOutcome.ACCEPTED: "accepted",
    ValidationOutcome.FORCE_ACCEPTED: "force-accepted",
}

COLUMNS: tuple[tuple[str, str | None], ...] = (
    # (header, store column it sorts by; None: not sortable in the store)
    ("Title", "title"),
    ("Status", "status"),
    ("Outcome", "validation_outcome"),
    ("Score", "latest_score"),
    ("Category", "latest_category"),
    ("Att.", "attempt_count"),
    ("Updated", "updated_at"),
)
COL_TITLE, COL_STATUS, COL_OUTCOME, COL_SCORE, COL_CATEGORY, COL_ATTEMPTS, COL_UPDATED = range(len(COLUMNS))

TASK_ID_ROLE = int(Qt.ItemDataRole.UserRole) + 1
TASK_ROLE = TASK_ID_ROLE + 1
GROUP_KEY_ROLE = TASK_ID_ROLE + 2
STATUS_ROLE = TASK_ID_ROLE + 3
PROGRESS_ROLE = TASK_ID_ROLE + 4

# Amber band for "Needs review": readable on both light and dark palettes.
NEEDS_REVIEW_BAND = QColor("#f0b429")
NEEDS_REVIEW_TEXT = QColor("#2b1d00")

OUTCOME_FILTERS: dict[str, list[str | None] | None] = {
    "any": None,
    "accepted": [ValidationOutcome.ACCEPTED.value],
    "force_accepted": [ValidationOutcome.FORCE_ACCEPTED.value],
    "none": [None],
}


@dataclass(frozen=True)
class QueueFilter:
    """What the analyst typed and picked in the filter bar."""

    text: str = ""
    status: TaskStatus | None = None
    outcome: str = "any"  # a key of OUTCOME_FILTERS

    def statuses_for(self, group: GroupSpec) -> list[TaskStatus]:
        if self.status is None:
            return list(group.statuses)
        return [s for s in group.statuses if s is self.status]

    def matches(self, task: TaskRecord) -> bool:
        """Decides whether a live-updated task still belongs in the filtered view (mirrors the
        store's filter, so a row never appears that a refresh would not show)."""
        if self.status is not None and task.status is not self.status:
            return False
        wanted = OUTCOME_FILTERS[self.outcome]
        if wanted is not None:
            value = task.validation_outcome.value if task.validation_outcome is not None else None
            if value not in wanted:
                return False
        if self.text:
            needle = self.text.casefold()
            return needle in task.title.casefold() or needle in task.text.casefold()
        return True


@dataclass
class _Group:
    spec: GroupSpec
    count: int = 0
    rows: list[TaskRecord] = field(default_factory=list)
    loading: bool = False


@dataclass
class _Snapshot:
    counts: dict[TaskStatus, int]
    pages: list[list[TaskRecord]]


_GROUP_ID = 0  # internalId of top-level group indexes; task rows carry group index + 1


class TaskQueueModel(QAbstractItemModel):
    sig_refreshed = Signal()
    """A full reload finished; views restore selection and expansion after it."""

    sig_task_updated = Signal(str)
    """One task's row was updated, moved, inserted or removed by a live update."""

    sig_page_loaded = Signal(int)
    """Another page of a group arrived (group row number)."""

    def __init__(
        self, store: Store, ops: CoreOps, *, page_size: int = 200, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._store = store
        self._ops = ops
        self.page_size = page_size
        self._groups = [_Group(spec) for spec in GROUPS]
        self._where: dict[str, int] = {}
        self._filter = QueueFilter()
        self._order_by = "updated_at"
        self._descending = True
        self._generation = 0
        self._progress: dict[str, RunProgress] = {}
        self._icons: dict[str, QIcon] = {}
        self.loaded_once = False

    # ------------------------------------------------------------------ public API
    @property
    def filter(self) -> QueueFilter:
        return self._filter

    @property
    def total_count(self) -> int:
        return sum(g.count for g in self._groups)

    def set_group_icons(self, icons: dict[str, QIcon]) -> None:
        self._icons = dict(icons)

    def set_filter(self, queue_filter: QueueFilter) -> asyncio.Task[_Snapshot]:
        self._filter = queue_filter
        return self.refresh()

    def refresh(self) -> asyncio.Task[_Snapshot]:
        """Reload counts and the first page of each group; stale in-flight results are dropped."""
        self._generation += 1
        generation = self._generation
        return self._ops.run(
            self._load_snapshot(self._filter, self._order_by, self._descending),
            what="Loading the task queue",
            on_done=lambda snap: self._apply_snapshot(generation, snap),
        )

    def update_task(self, task_id: str) -> asyncio.Task[tuple[TaskRecord, dict[TaskStatus, int]]]:
        """Re-read one task after a core event and move its row where it now belongs."""
        generation = self._generation
        return self._ops.run(
            self._load_one(task_id, self._filter),
            what="Updating the task queue",
            on_done=lambda result: self._apply_task(generation, *result),
        )

    def set_progress(self, progress: RunProgress) -> None:
        self._progress[progress.task_id] = progress
        self._emit_row_changed(progress.task_id, COL_STATUS, COL_STATUS)

    def progress(self, task_id: str) -> RunProgress | None:
        return self._progress.get(task_id)

    def index_of_task(self, task_id: str) -> QModelIndex:
        gi = self._where.get(task_id)
        if gi is None:
            return QModelIndex()
        for ri, task in enumerate(self._groups[gi].rows):
            if task.id == task_id:
                return self.createIndex(ri, 0, gi + 1)
        return QModelIndex()

    def group_index(self, key: str) -> QModelIndex:
        for gi, g in enumerate(self._groups):
            if g.spec.key == key:
                return self.createIndex(gi, 0, _GROUP_ID)
        raise KeyError(key)

    def group_count(self, key: str) -> int:
        return next(g.count for g in self._groups if g.spec.key == key)

    def group_task_ids(self, key: str) -> list[str]:
        return [t.id for t in next(g.rows for g in self._groups if g.spec.key == key)]

    def task(self, task_id: str) -> TaskRecord | None:
        gi = self._where.get(task_id)
        if gi is None:
            return None
        return next((t for t in self._groups[gi].rows if t.id == task_id), None)

    # ------------------------------------------------------------------ async loads (no Qt here)
    async def _load_snapshot(self, flt: QueueFilter, order_by: str, descending: bool) -> _Snapshot:
        outcomes = OUTCOME_FILTERS[flt.outcome]
        text = flt.text or None
        # Counts first: groups with no match need no page query (with a selective filter, most
        # keystrokes then cost one scan). Measured on 2 cores, running all nine reads at once
        # was slower than this.
        counts = await self._store.count_tasks_by_status(text=text, outcomes=outcomes)

        async def first_page(group: GroupSpec) -> list[TaskRecord]:
            statuses = flt.statuses_for(group)
            if not statuses or not any(counts[s] for s in statuses):
                return []
            return await self._store.list_tasks(
                statuses=statuses,
                text=text,
                outcomes=outcomes,
                limit=self.page_size,
                order_by=order_by,
                descending=descending,
            )

        pages = await asyncio.gather(*(first_page(g) for g in GROUPS))
        return _Snapshot(counts=counts, pages=list(pages))

    async def _load_page(self, gi: int, offset: int, flt: QueueFilter) -> list[TaskRecord]:
        return await self._store.list_tasks(
            statuses=flt.statuses_for(GROUPS[gi]),
            text=flt.text or None,
            outcomes=OUTCOME_FILTERS[flt.outcome],
            limit=self.page_size,
            offset=offset,
            order_by=self._order_by,
            descending=self._descending,
        )

    async def _load_one(self, task_id: str, flt: QueueFilter) -> tuple[TaskRecord, dict[TaskStatus, int]]:
        task = await self._store.get_task(task_id)
        counts = await self._store.count_tasks_by_status(
            text=flt.text or None, outcomes=OUTCOME_FILTERS[flt.outcome]
        )
        return task, counts

    # ------------------------------------------------------------------ applying results (GUI thread)
    def _group_count(self, spec: GroupSpec, counts: dict[TaskStatus, int]) -> int:
        return sum(counts.get(s, 0) for s in self._filter.statuses_for(spec))

    def _apply_snapshot(self, generation: int, snap: _Snapshot) -> None:
        if generation != self._generation:
            return
        self.beginResetModel()
        self._where.clear()
        for gi, (group, page) in enumerate(zip(self._groups, snap.pages, strict=True)):
            group.count = self._group_count(group.spec, snap.counts)
            group.rows = list(page)
            group.loading = False
            for task in page:
                self._where[task.id] = gi
        self.loaded_once = True
        self.endResetModel()
        self.sig_refreshed.emit()

    def _append_page(self, generation: int, gi: int, page: list[TaskRecord]) -> None:
        group = self._groups[gi]
        if generation != self._generation:
            return
        group.loading = False
        fresh = [t for t in page if t.id not in self._where]
        if not fresh:
            return
        parent = self.createIndex(gi, 0, _GROUP_ID)
        first = len(group.rows)
        self.beginInsertRows(parent, first, first + len(fresh) - 1)
        group.rows.extend(fresh)
        for task in fresh:
            self._where[task.id] = gi
        self.endInsertRows()
        self.sig_page_loaded.emit(gi)

    def _precedes(self, a: TaskRecord, b: TaskRecord) -> bool:
        """The store's order: the sort column (NULL lowest), then id ascending as a tie-break."""
        va, vb = getattr(a, self._order_by), getattr(b, self._order_by)
        if va == vb:
            return a.id < b.id
        if va is None:
            less = True
        elif vb is None:
            less = False
        else:
            less = va < vb
        return not less if self._descending else less

    def _position(self, rows: list[TaskRecord], task: TaskRecord) -> int:
        for i, other in enumerate(rows):
            if self._precedes(task, other):
                return i
        return len(rows)

    def _apply_task(self, generation: int, task: TaskRecord, counts: dict[TaskStatus, int]) -> None:
        if generation != self._generation:
            return
        old_gi = self._where.get(task.id)
        old_row = -1
        if old_gi is not None:
            old_rows = self._groups[old_gi].rows
            old_row = next(i for i, t in enumerate(old_rows) if t.id == task.id)
            if old_rows[old_row].version > task.version:
                return  # an older read arrived after a newer one
        if not task.status.is_execution_active:
            self._progress.pop(task.id, None)

        new_gi: int | None = GROUP_OF_STATUS[task.status] if self._filter.matches(task) else None
        new_row = -1
        if new_gi is not None:
            target = self._groups[new_gi]
            rows = [t for t in target.rows if t.id != task.id]
            new_row = self._position(rows, task)
            fully_loaded = len(rows) + 1 >= self._group_count(target.spec, counts)
            if new_row == len(rows) and not fully_loaded:
                new_gi = None  # it sorts into a page not loaded yet; fetchMore will bring it

        if old_gi is not None and new_gi is not None:
            self._move(task, old_gi, old_row, new_gi, new_row)
        elif old_gi is not None:
            parent = self.createIndex(old_gi, 0, _GROUP_ID)
            self.beginRemoveRows(parent, old_row, old_row)
            del self._groups[old_gi].rows[old_row]
            del self._where[task.id]
            self.endRemoveRows()
        elif new_gi is not None:
            parent = self.createIndex(new_gi, 0, _GROUP_ID)
            self.beginInsertRows(parent, new_row, new_row)
            self._groups[new_gi].rows.insert(new_row, task)
            self._where[task.id] = new_gi
            self.endInsertRows()

        for gi, group in enumerate(self._groups):
            count = self._group_count(group.spec, counts)
            if count != group.count:
                group.count = count
                top = self.createIndex(gi, 0, _GROUP_ID)
                self.dataChanged.emit(top, top.siblingAtColumn(len(COLUMNS) - 1))
        self.sig_task_updated.emit(task.id)

    def _move(self, task: TaskRecord, old_gi: int, old_row: int, new_gi: int, new_row: int) -> None:
        if old_gi == new_gi:
            # Qt wants the destination in pre-move coordinates; moving onto itself is a no-op.
            dest = new_row if new_row < old_row else new_row + 1
            if dest not in (old_row, old_row + 1):
                parent = self.createIndex(old_gi, 0, _GROUP_ID)
                self.beginMoveRows(parent, old_row, old_row, parent, dest)
                rows = self._groups[old_gi].rows
                del rows[old_row]
                rows.insert(new_row, task)
                self.endMoveRows()
            else:
                self._groups[old_gi].rows[old_row] = task
        else:
            src = self.createIndex(old_gi, 0, _GROUP_ID)
            dst = self.createIndex(new_gi, 0, _GROUP_ID)
            self.beginMoveRows(src, old_row, old_row, dst, new_row)
            del self._groups[old_gi].rows[old_row]
            self._groups[new_gi].rows.insert(new_row, task)
            self._where[task.id] = new_gi
            self.endMoveRows()
        self._emit_row_changed(task.id, 0, len(COLUMNS) - 1)

    def _emit_row_changed(self, task_id: str, first: int, last: int) -> None:
        idx = self.index_of_task(task_id)
        if idx.isValid():
            self.dataChanged.emit(idx.siblingAtColumn(first), idx.siblingAtColumn(last))

    # ------------------------------------------------------------------ QAbstractItemModel
    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        """Implements ``QAbstractItemModel::index``: groups at the top, tasks one level down."""
        if column < 0 or column >= len(COLUMNS) or row < 0:
            return QModelIndex()
        if not parent.isValid():
            if row >= len(self._groups):
                return QModelIndex()
            return self.createIndex(row, column, _GROUP_ID)
        if parent.internalId() != _GROUP_ID or parent.column() != 0:
            return QModelIndex()
        gi = parent.row()
        if row >= len(self._groups[gi].rows):
            return QModelIndex()
        return self.createIndex(row, column, gi + 1)

    def parent(self, child: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        """Implements ``QAbstractItemModel::parent``: a task's parent is its group (column 0)."""
        if not child.isValid():
            return QModelIndex()
        internal = child.internalId()
        if internal == _GROUP_ID:
            return QModelIndex()
        return self.createIndex(internal - 1, 0, _GROUP_ID)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::rowCount``: only the rows loaded so far."""
        if not parent.isValid():
            return len(self._groups)
        if parent.internalId() != _GROUP_ID or parent.column() != 0:
            return 0
        return len(self._groups[parent.row()].rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        """Implements ``QAbstractItemModel::columnCount``."""
        return len(COLUMNS)

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        """Implements ``QAbstractItemModel::hasChildren``: a group with unloaded tasks still has children."""
        if not parent.isValid():
            return True
        if parent.internalId() != _GROUP_ID or parent.column() != 0:
            return False
        group = self._groups[parent.row()]
        return group.count > 0 or bool(group.rows)

    def canFetchMore(self, parent: Index) -> bool:
        """Implements ``QAbstractItemModel::canFetchMore``: more stored tasks than loaded rows."""
        if not parent.isValid() or parent.internalId() != _GROUP_ID:
            return False
        group = self._groups[parent.row()]
        return not group.loading and len(group.rows) < group.count

    def fetchMore(self, parent: Index) -> None:
        """Implements ``QAbstractItemModel::fetchMore`` by scheduling the next page asynchronously."""
        if not self.canFetchMore(parent):
            return
        gi = parent.row()
        group = self._groups[gi]
        group.loading = True
        generation = self._generation

        def failed(_exc: BaseException) -> bool:
            group.loading = False
            return False

        self._ops.run(
            self._load_page(gi, len(group.rows), self._filter),
            what=f"Loading more '{group.spec.title}' tasks",
            on_done=lambda page: self._append_page(generation, gi, page),
            on_error=failed,
        )

    def flags(self, index: Index) -> Qt.ItemFlag:
        """Implements ``QAbstractItemModel::flags``: group headers cannot be selected."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        if index.internalId() == _GROUP_ID:
            return Qt.ItemFlag.ItemIsEnabled
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Implements ``QAbstractItemModel::headerData``."""
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(COLUMNS):
            if role == Qt.ItemDataRole.DisplayRole:
                return COLUMNS[section][0]
            if role == Qt.ItemDataRole.ToolTipRole:
                return "Attempts" if section == COL_ATTEMPTS else COLUMNS[section][0]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Implements ``QAbstractItemModel::data`` for group headers and task rows."""
        if not index.isValid():
            return None
        if index.internalId() == _GROUP_ID:
            return self._group_data(self._groups[index.row()], index.column(), role)
        gi = index.internalId() - 1
        if gi >= len(self._groups) or index.row() >= len(self._groups[gi].rows):
            return None
        return self._task_data(self._groups[gi].rows[index.row()], index.column(), role)

    def _group_data(self, group: _Group, column: int, role: int) -> Any:
        review = group.spec.key == "needs_review"
        if role == Qt.ItemDataRole.DisplayRole and column == 0:
            return f"{group.spec.title}  ({group.count})"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{group.spec.title}: {group.spec.hint}"
        if role == Qt.ItemDataRole.DecorationRole and column == 0:
            return self._icons.get(group.spec.key)
        if role == Qt.ItemDataRole.FontRole:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.BackgroundRole and review:
            return NEEDS_REVIEW_BAND
        if role == Qt.ItemDataRole.ForegroundRole and review:
            return NEEDS_REVIEW_TEXT
        if role == GROUP_KEY_ROLE:
            return group.spec.key
        return None

    def _task_data(self, task: TaskRecord, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(task, column)
        if role == TASK_ID_ROLE:
            return task.id
        if role == TASK_ROLE:
            return task
        if role == STATUS_ROLE:
            return task.status.value
        if role == PROGRESS_ROLE:
            return self._progress.get(task.id)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == COL_UPDATED:
                return _local_time(task.updated_at, full=True)
            return task.text[:600]
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (COL_SCORE, COL_ATTEMPTS):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _display(self, task: TaskRecord, column: int) -> str:
        if column == COL_TITLE:
            return task.title
        if column == COL_STATUS:
            label = STATUS_LABELS[task.status]
            progress = self._progress.get(task.id)
            if progress and task.status.is_execution_active:
                bits = [f"attempt {progress.attempt}"]
                if progress.iteration:
                    bits.append(f"iter {progress.iteration}")
                if progress.tool:
                    bits.append(progress.tool)
                label = f"{label} · {' · '.join(bits)}"
            return label
        if column == COL_OUTCOME:
            return OUTCOME_LABELS.get(task.validation_outcome, "") if task.validation_outcome else ""
        if column == COL_SCORE:
            return "—" if task.latest_score is None else f"{task.latest_score:.2f}"
        if column == COL_CATEGORY:
            return task.latest_category or ""
        if column == COL_ATTEMPTS:
            return str(task.attempt_count)
        if column == COL_UPDATED:
            return _local_time(task.updated_at)
        return ""

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Implements ``QAbstractItemModel::sort`` by asking the store for a new order."""
        if not 0 <= column < len(COLUMNS) or COLUMNS[column][1] is None:
            return
        order_by = COLUMNS[column][1]
        descending = order == Qt.SortOrder.DescendingOrder
        assert order_by is not None
        if (order_by, descending) == (self._order_by, self._descending):
            return
        self._order_by, self._descending = order_by, descending
        self.refresh()


def _local_time(value: datetime, *, full: bool = False) -> str:
    """Today's rows show the time, older rows the day: the column stays narrow for the title."""
    try:
        local = value.astimezone()
    except (ValueError, OverflowError):
        return str(value)
    if full:
        return local.strftime("%Y-%m-%d %H:%M:%S")
    if local.date() == datetime.now().astimezone().date():
        return local.strftime("%H:%M")
    return local.strftime("%d %b %Y") if local.year != datetime.now().year else local.strftime("%d %b")
