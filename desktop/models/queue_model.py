"""The task queue: status groups with task rows under them, loaded page by page from core.

The model holds no business rules and composes no query. It keeps a row cache per group and
asks core's read service (``core.tasks.queue.TaskQueue``) for everything else; every read is an
async operation run through ``CoreOps``, so nothing here blocks painting:

* ``refresh()`` asks for the counts and the first page of every group, then resets the model;
* ``fetchMore`` (the view calls it when the analyst scrolls to the end of a group) asks for the
  page after the group's last loaded row (a keyset cursor) and appends it when it arrives;
* ``update_task()`` (called for core's ``TaskChanged`` notices) asks for one task and whether the
  filter still admits it, and moves its row to where ``core.tasks.queue.place`` says, with
  ``beginMoveRows``, so the view's selection and scroll position survive a live update.

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

from core.domain.queue import GROUP_OF_STATUS, PageCursor, QueueFilter, QueuePage, QueueSort, SortColumn
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.events import RunProgress
from core.tasks.queue import QueueSnapshot, RowUpdate, TaskQueue, group_count, place
from desktop.ops import CoreOps
from desktop.presentation import (
    GROUPS,
    NEEDS_REVIEW_BAND,
    NEEDS_REVIEW_TEXT,
    STATUS_LABELS,
    GroupLook,
    outcome_text,
)

Index = QModelIndex | QPersistentModelIndex

GROUP_INDEX: dict[str, int] = {g.key: gi for gi, g in enumerate(GROUPS)}

COLUMNS: tuple[tuple[str, SortColumn], ...] = (
    # (header, the column core sorts by)
    ("Title", SortColumn.TITLE),
    ("Status", SortColumn.STATUS),
    ("Outcome", SortColumn.VALIDATION_OUTCOME),
    ("Score", SortColumn.LATEST_SCORE),
    ("Category", SortColumn.LATEST_CATEGORY),
    ("Att.", SortColumn.ATTEMPT_COUNT),
    ("Updated", SortColumn.UPDATED_AT),
)
COL_TITLE, COL_STATUS, COL_OUTCOME, COL_SCORE, COL_CATEGORY, COL_ATTEMPTS, COL_UPDATED = range(len(COLUMNS))

TASK_ID_ROLE = int(Qt.ItemDataRole.UserRole) + 1
TASK_ROLE = TASK_ID_ROLE + 1
GROUP_KEY_ROLE = TASK_ID_ROLE + 2
STATUS_ROLE = TASK_ID_ROLE + 3
PROGRESS_ROLE = TASK_ID_ROLE + 4

_BAND = QColor(NEEDS_REVIEW_BAND)
_BAND_TEXT = QColor(NEEDS_REVIEW_TEXT)


@dataclass
class _Group:
    spec: GroupLook
    count: int = 0
    rows: list[TaskRecord] = field(default_factory=list)
    loading: bool = False
    wanted: bool = False  # the view asked for the next page (it shows the group's last rows)


_GROUP_ID = 0  # internalId of top-level group indexes; task rows carry group index + 1


class TaskQueueModel(QAbstractItemModel):
    sig_refreshed = Signal()
    """A full reload finished; views restore selection and expansion after it."""

    sig_task_updated = Signal(str)
    """One task's row was updated, moved, inserted or removed by a live update."""

    sig_page_loaded = Signal(int)
    """Another page of a group arrived (group row number)."""

    def __init__(
        self, queue: TaskQueue, ops: CoreOps, *, page_size: int = 200, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._queue = queue
        self._ops = ops
        self.page_size = page_size
        self._groups = [_Group(spec) for spec in GROUPS]
        self._where: dict[str, int] = {}
        self._filter = QueueFilter()
        self._sort = QueueSort()
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

    @property
    def sort_order(self) -> QueueSort:
        return self._sort

    def set_filter(self, queue_filter: QueueFilter) -> asyncio.Task[QueueSnapshot]:
        self._filter = queue_filter
        return self.refresh()

    def refresh(self) -> asyncio.Task[QueueSnapshot]:
        """Reload counts and the first page of each group; stale in-flight results are dropped."""
        self._generation += 1
        generation = self._generation
        return self._ops.run(
            self._queue.snapshot(self._filter, self._sort, page_size=self.page_size),
            what="Loading the task queue",
            on_done=lambda snap: self._apply_snapshot(generation, snap),
        )

    def update_task(self, task_id: str) -> asyncio.Task[RowUpdate | None]:
        """Re-read one task after a core notice and move its row where it now belongs."""
        generation = self._generation
        return self._ops.run(
            self._queue.row(task_id, self._filter),
            what="Updating the task queue",
            on_done=lambda update: self._apply_task(generation, update),
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

    # ------------------------------------------------------------------ applying results (GUI thread)
    def _group_count(self, spec: GroupLook, counts: dict[TaskStatus, int]) -> int:
        return group_count(spec.group, self._filter, counts)

    def _apply_snapshot(self, generation: int, snap: QueueSnapshot) -> None:
        if generation != self._generation:
            return
        self.beginResetModel()
        self._where.clear()
        for gi, group in enumerate(self._groups):
            page = snap.pages[group.spec.key].rows
            group.count = self._group_count(group.spec, snap.counts)
            group.rows = list(page)
            group.loading = False
            for task in page:
                self._where[task.id] = gi
        self.loaded_once = True
        self.endResetModel()
        self.sig_refreshed.emit()

    def _append_page(self, generation: int, gi: int, page: QueuePage) -> None:
        group = self._groups[gi]
        if generation != self._generation:
            return
        group.loading = group.wanted = False
        fresh = [t for t in page.rows if t.id not in self._where]
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

    def _apply_task(self, generation: int, update: RowUpdate | None) -> None:
        if generation != self._generation or update is None:
            return
        task, counts = update.task, update.counts
        old_gi = self._where.get(task.id)
        old_row = -1
        if old_gi is not None:
            old_rows = self._groups[old_gi].rows
            old_row = next(i for i, t in enumerate(old_rows) if t.id == task.id)
            if old_rows[old_row].version > task.version:
                return  # an older read arrived after a newer one
        if not task.status.is_execution_active:
            self._progress.pop(task.id, None)

        new_gi: int | None = GROUP_INDEX[GROUP_OF_STATUS[task.status]] if update.admitted else None
        new_row = -1
        if new_gi is not None:
            target = self._groups[new_gi]
            rows = [t for t in target.rows if t.id != task.id]
            complete = len(rows) + 1 >= self._group_count(target.spec, counts)
            position = place(rows, task, self._sort, complete=complete)
            if position is None:
                new_gi = None  # it sorts into a page not loaded yet; fetchMore will bring it
            else:
                new_row = position

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

    def has_more(self, group_row: int) -> bool:
        """The group has stored tasks beyond its loaded rows."""
        group = self._groups[group_row]
        return len(group.rows) < group.count

    def request_more(self, group_row: int) -> bool:
        """The view shows the end of this group's rows: load the next page (once at a time)."""
        group = self._groups[group_row]
        if group.loading or not self.has_more(group_row):
            return False
        group.wanted = True
        self.fetchMore(self.createIndex(group_row, 0, _GROUP_ID))
        return True

    def canFetchMore(self, parent: Index) -> bool:
        """Implements ``QAbstractItemModel::canFetchMore``, only for a page the view asked for.

        QTreeView asks every expanded parent whenever it lays items out, and fetches if it may;
        answering "yes" whenever rows remain made the queue page itself forever with no input
        (each page's rows trigger another layout). Pages are therefore fetched only on demand,
        through ``request_more``, when the view shows a group's last loaded row.
        """
        if not parent.isValid() or parent.internalId() != _GROUP_ID:
            return False
        group = self._groups[parent.row()]
        return group.wanted and not group.loading and len(group.rows) < group.count

    def fetchMore(self, parent: Index) -> None:
        """Implements ``QAbstractItemModel::fetchMore`` by scheduling the next page asynchronously."""
        if not self.canFetchMore(parent):
            return
        gi = parent.row()
        group = self._groups[gi]
        group.loading = True
        generation = self._generation

        def failed(_exc: BaseException) -> bool:
            group.loading = group.wanted = False
            return False

        after = PageCursor.after(group.rows[-1], self._sort) if group.rows else None
        self._ops.run(
            self._queue.page(group.spec.group, self._filter, self._sort, after=after, limit=self.page_size),
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
            return _BAND
        if role == Qt.ItemDataRole.ForegroundRole and review:
            return _BAND_TEXT
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
            if task.validation_outcome is None:
                return ""
            return outcome_text(task.validation_outcome, task.latest_validation_status)
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
        """Implements ``QAbstractItemModel::sort`` by asking core for the new order."""
        if not 0 <= column < len(COLUMNS):
            return
        wanted = QueueSort(column=COLUMNS[column][1], descending=order == Qt.SortOrder.DescendingOrder)
        if wanted == self._sort:
            return
        self._sort = wanted
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
