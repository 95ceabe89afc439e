"""The task queue: status groups with task rows under them, loaded page by page from core.

The model holds no business rules and composes no query. It keeps a row cache per group and
asks core's read service (``core.tasks.queue.TaskQueue``) for everything else; every read is an
async operation run through ``CoreOps``, so nothing here blocks painting:

* ``refresh()`` asks for the counts and the first page of every group, then resets the model;
  under a text filter the counts come afterwards, in the background, and a group's header says
  "≥ N" until they are known; a newer refresh cancels the one in flight (a keystroke makes the
  previous one's answer worthless), and only one runs at a time, so a burst of refreshes never
  takes more than one of the store's connections;
* ``fetchMore`` (the view calls it when the analyst scrolls to the end of a group) asks for the
  page after the group's last loaded row (a keyset cursor) and appends it when it arrives;
* ``update_task()`` (called for core's ``TaskChanged`` notices) asks for one task and whether the
  filter still admits it, and moves its row to where ``core.tasks.queue.place`` says, with
  ``beginMoveRows``, so the view's selection and scroll position survive a live update.
  Counts move with the row (from ``task_counts``, or by the update's own move under a text
  filter), never by recounting. A few row reads run at a time; a burst of notices larger than
  a page of rows (crash recovery, a bulk action elsewhere) becomes one refresh instead.

Every async result carries the generation it was asked in; a result from before the latest
reset (a filter keystroke, a new sort) is dropped instead of being applied to the wrong rows.

At start the model exists before the store does: ``seed()`` gives it the first rows the standard
library read (``core.queue_peek``), its queue is a ``PendingQueue`` whose reads wait, and
``attach()`` hands it the store's queue once the workspace is open; the first reload then
replaces the seeded rows in place, keeping the analyst's selection.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QIcon

from core.domain.claims import ClaimRecord
from core.domain.queue import PageCursor, QueueFilter, QueuePage, QueueSort, group_of_status
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus
from core.events import RunProgress
from core.tasks.queue import QueueSnapshot, RowUpdate, TaskQueue, group_count, place
from desktop.models.pending_queue import PendingQueue, QueueReads
from desktop.models.queue_cells import (
    COL_ATTEMPTS,
    COL_CATEGORY,
    COL_OUTCOME,
    COL_SCORE,
    COL_STATUS,
    COL_TITLE,
    COL_UPDATED,
    COLUMNS,
    GROUP_FLAGS,
    GROUP_KEY_ROLE,
    NO_FLAGS,
    PROGRESS_ROLE,
    READ_ONLY_MARK,
    STATUS_ROLE,
    TASK_FLAGS,
    TASK_ID_ROLE,
    TASK_ROLE,
    TASK_ROLES,
    group_cell,
    task_cell,
)
from desktop.ops import CoreOps
from desktop.presentation import GROUPS, GroupLook

# The columns and roles live with the cells' answers (desktop/models/queue_cells.py); views and
# tests import them from here too, as the model is what they talk to.
__all__ = [
    "COLUMNS",
    "COL_ATTEMPTS",
    "COL_CATEGORY",
    "COL_OUTCOME",
    "COL_SCORE",
    "COL_STATUS",
    "COL_TITLE",
    "COL_UPDATED",
    "GROUP_INDEX",
    "GROUP_KEY_ROLE",
    "PROGRESS_ROLE",
    "READ_ONLY_MARK",
    "STATUS_ROLE",
    "TASK_ID_ROLE",
    "TASK_ROLE",
    "PendingQueue",
    "QueueReads",
    "TaskQueueModel",
]

Index = QModelIndex | QPersistentModelIndex

GROUP_INDEX: dict[str, int] = {g.key: gi for gi, g in enumerate(GROUPS)}


# Row reads in flight at once: live updates never take more than this many connections.
ROW_READS = 2
# More changed tasks waiting than this: one reload costs less than reading them one by one.
ROW_BACKLOG = 64
# Rows per group in a reload: about a screenful. A reload converts every row it reads on the
# loop's thread (1,600 rows at 200 a group stalled the loop ~100 ms per keystroke); scrolling
# brings later pages at ``page_size``.
FIRST_PAGE = 50

# A text filter's exact counts are asked this long after its pages show (headers say "≥ N").
COUNT_AFTER_S = 0.25


@dataclass
class _Group:
    spec: GroupLook
    count: int = 0  # exact when ``exact``, else a lower bound (what the loaded pages prove)
    exact: bool = True
    more: bool = False  # the store has rows beyond the loaded ones
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

    sig_reloading = Signal()
    """A reload's rows are about to replace the loaded ones in place (no model reset): the current
    row may move on its own until ``sig_refreshed``, which views should not take for the analyst's."""

    def __init__(
        self,
        queue: QueueReads,
        ops: CoreOps,
        *,
        page_size: int = 200,
        parent: QObject | None = None,
        groups: tuple[GroupLook, ...] = GROUPS,
    ) -> None:
        super().__init__(parent)
        self._queue = queue
        self._ops = ops
        self.page_size = page_size
        self._use_groups(groups)
        self._where: dict[str, int] = {}
        self._filter = QueueFilter()
        self._sort = QueueSort()
        self._generation = 0
        self._progress: dict[str, RunProgress] = {}
        self._icons: dict[str, QIcon] = {}
        self.loaded_once = False
        # One reload and one background count at a time; a newer one cancels the older.
        self._refresh_lock = asyncio.Lock()
        self._refresh_task: asyncio.Task[QueueSnapshot] | None = None
        self._count_lock = asyncio.Lock()
        self._count_task: asyncio.Task[dict[TaskStatus, int]] | None = None
        self._page_reads: set[asyncio.Task[QueuePage]] = set()  # scrolling's pages in flight
        self._dirty: dict[str, None] = {}  # changed tasks waiting for a row read, in notice order
        self._row_reads = 0
        self._row_waiters: list[asyncio.Future[None]] = []
        self.refreshes_started = 0  # for tests and benchmarks: reloads actually run
        self._claims: dict[str, ClaimRecord] = {}
        self.reviewer: str | None = None  # this desk's reviewer: their own claims are not marked
        self._viewers: dict[str, list[str]] = {}  # task id -> other reviewers looking at it

    def _use_groups(self, looks: tuple[GroupLook, ...]) -> None:
        self.looks = looks
        self._groups = [_Group(spec) for spec in looks]
        index = {g.key: gi for gi, g in enumerate(looks)}
        self._group_at = {
            status: index[key] for status, key in group_of_status([g.group for g in looks]).items()
        }

    # ------------------------------------------------------------------ public API
    def set_groups(self, looks: tuple[GroupLook, ...]) -> None:
        """Band the queue by other groups (blind review's: ``presentation.BLIND_GROUPS``), then reload."""
        if looks == self.looks:
            return
        self.beginResetModel()
        self._use_groups(looks)
        self._where = {}
        self.endResetModel()
        self.refresh()

    def seed(self, snapshot: QueueSnapshot) -> None:
        """First rows before the store is open (``core.tasks.queue.snapshot_from_peek``).

        Applied as a first load: views lay them out and the analyst can move through them; the
        next ``refresh`` replaces them in place. Ignored once anything has loaded.
        """
        if not self.loaded_once and set(snapshot.pages) == {g.spec.key for g in self._groups}:
            self._apply_snapshot(self._generation, snapshot)

    def attach(self, queue: TaskQueue) -> None:
        """The store's queue, now open: reads waiting in a ``PendingQueue`` go through it."""
        if isinstance(self._queue, PendingQueue):
            self._queue.attach(queue)
        self._queue = queue

    @property
    def first_page_size(self) -> int:
        """Rows per group a reload reads (a seed must read as many, or rows would vanish at the reload)."""
        return min(self.page_size, FIRST_PAGE)

    @property
    def filter(self) -> QueueFilter:
        return self._filter

    @property
    def total_count(self) -> int:
        return sum(g.count for g in self._groups)

    def loaded_rows(self) -> int:
        """Task rows held in memory (benchmarks: an idle queue must hold a few pages, not the store)."""
        return sum(len(g.rows) for g in self._groups)

    def set_group_icons(self, icons: dict[str, QIcon]) -> None:
        self._icons = dict(icons)

    @property
    def sort_order(self) -> QueueSort:
        return self._sort

    def set_filter(self, queue_filter: QueueFilter) -> asyncio.Task[QueueSnapshot]:
        self._filter = queue_filter
        return self.refresh()

    def refresh(self) -> asyncio.Task[QueueSnapshot]:
        """Reload counts and the first page of each group; stale in-flight results are dropped.

        The reload in flight is cancelled: its answer is for an older filter or older rows. The
        new one waits for the old one to let go of its connection, so a burst of refreshes
        (keystrokes, thousands of notices) holds one connection, never the whole pool.
        """
        self._generation += 1
        generation = self._generation
        # Pages the view asked for under the old filter are worthless too: stopped, not ignored
        # (each is a probe and a walk that would compete with this reload for the two cores).
        for stale in (self._refresh_task, self._count_task, *self._page_reads):
            if stale is not None and not stale.done():
                stale.cancel()
        self._dirty.clear()  # the reload shows every change noticed so far
        flt, sort, looks = self._filter, self._sort, self.looks

        async def load() -> QueueSnapshot:
            async with self._refresh_lock:
                self.refreshes_started += 1
                return await self._queue.snapshot(
                    flt, sort, page_size=self.first_page_size, groups=[g.group for g in looks]
                )

        self._refresh_task = self._ops.run(
            load(),
            what="Loading the task queue",
            on_done=lambda snap: self._apply_snapshot(generation, snap),
        )
        self._refresh_task.add_done_callback(lambda _t: self._wake_waiters())
        return self._refresh_task

    def update_task(self, task_id: str) -> asyncio.Future[Any]:
        """Re-read one task after a core notice and move its row where it now belongs.

        Returns what to await for the change to show: the row reads draining and any reload a
        burst of notices turned into landing.
        """
        waiter: asyncio.Future[None] = asyncio.get_event_loop().create_future()
        self._row_waiters.append(waiter)
        self._dirty[task_id] = None
        if len(self._dirty) > ROW_BACKLOG:
            self.refresh()
        else:
            self._pump_rows()
        return waiter

    def _pump_rows(self) -> None:
        while self._row_reads < ROW_READS and self._dirty:
            task_id = next(iter(self._dirty))
            del self._dirty[task_id]
            self._row_reads += 1
            read = self._ops.run(
                self._queue.row(task_id, self._filter),
                what="Updating the task queue",
                on_done=partial(self._apply_task, self._generation),
            )
            read.add_done_callback(self._row_read_done)
        self._wake_waiters()

    def _wake_waiters(self) -> None:
        if (
            self._dirty
            or self._row_reads
            or (self._refresh_task is not None and not self._refresh_task.done())
        ):
            return
        waiters, self._row_waiters = self._row_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _row_read_done(self, _read: asyncio.Task[Any]) -> None:
        self._row_reads -= 1
        self._pump_rows()

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
        """The group's count; 0 for a group this banding does not have (blind review merges two)."""
        return next((g.count for g in self._groups if g.spec.key == key), 0)

    def group_task_ids(self, key: str) -> list[str]:
        """The group's loaded task ids; none for a group this banding does not have."""
        return [t.id for t in next((g.rows for g in self._groups if g.spec.key == key), ())]

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
        self._claims = dict(snap.claims)
        if not self.loaded_once:  # nothing on screen to keep
            self.beginResetModel()
            for group in self._groups:
                group.rows = list(snap.pages[group.spec.key].rows)
        else:
            # Rows are replaced group by group, not reset: the view keeps its expansion, spans,
            # selection and scroll, and lays out and paints once; a keystroke whose first pages
            # did not change (typing on within a word) costs it nothing at all.
            self.sig_reloading.emit()
            for gi, group in enumerate(self._groups):
                self._replace_rows(gi, list(snap.pages[group.spec.key].rows))
        for gi, group in enumerate(self._groups):
            page = snap.pages[group.spec.key]
            shown = (group.count, group.exact)
            group.more = not page.complete
            if snap.counts is not None:
                group.count, group.exact = self._group_count(group.spec, snap.counts), True
            else:  # a complete first page is its group's exact count; otherwise a lower bound
                group.count, group.exact = len(page.rows), page.complete
            group.loading = group.wanted = False
            if self.loaded_once and (group.count, group.exact) != shown:
                self._emit_group_changed(gi)
        self._where = {task.id: gi for gi, group in enumerate(self._groups) for task in group.rows}
        if not self.loaded_once:
            self.loaded_once = True
            self.endResetModel()
        self.sig_refreshed.emit()
        if any(not g.exact for g in self._groups):
            self._count_in_background(generation)

    def _replace_rows(self, gi: int, new: list[TaskRecord]) -> None:
        """One group's loaded rows become ``new`` by removing and inserting rows, never a reset.

        Rows in both keep their persistent indexes (the selection, the current row), so only the
        rows that came or went are announced; rows that stayed but changed get ``dataChanged``.
        When a row that stayed changed places (another sort), every row of the group is replaced.
        """
        rows = self._groups[gi].rows
        parent = self.createIndex(gi, 0, _GROUP_ID)
        old_ids = [t.id for t in rows]
        new_ids = [t.id for t in new]
        if old_ids != new_ids:
            kept = set(old_ids).intersection(new_ids)
            if [i for i in old_ids if i in kept] != [i for i in new_ids if i in kept]:
                kept = set()
            # Bottom up, so the rows above a removed run keep their numbers.
            for first, last in reversed(_runs([r for r, i in enumerate(old_ids) if i not in kept])):
                self.beginRemoveRows(parent, first, last)
                del rows[first : last + 1]
                self.endRemoveRows()
            # What is left is ``new``'s kept rows in ``new``'s order: top down, each run goes
            # where it belongs among the rows before it, which are all in place by then.
            for first, last in _runs([r for r, i in enumerate(new_ids) if i not in kept]):
                self.beginInsertRows(parent, first, last)
                rows[first:first] = new[first : last + 1]
                self.endInsertRows()
        changed = [
            r for r, (was, now) in enumerate(zip(rows, new, strict=True)) if was is not now and was != now
        ]
        rows[:] = new
        for first, last in _runs(changed):
            self.dataChanged.emit(
                self.createIndex(first, 0, gi + 1), self.createIndex(last, len(COLUMNS) - 1, gi + 1)
            )

    def _count_in_background(self, generation: int) -> None:
        """Exact counts for a filter whose counting costs more than its pages, after they show."""
        if self._count_task is not None and not self._count_task.done():
            self._count_task.cancel()
        flt = self._filter

        async def count() -> dict[TaskStatus, int]:
            # Typing on: the next keystroke cancels this before it costs anything. A count over
            # a common word's matches is seconds of a core at 1M tasks; it starts once typing pauses.
            await asyncio.sleep(COUNT_AFTER_S)
            async with self._count_lock:
                return await self._queue.counts(flt)

        self._count_task = self._ops.run(
            count(), what="Counting the task queue", on_done=lambda c: self._apply_counts(generation, c)
        )

    def _apply_counts(self, generation: int, counts: dict[TaskStatus, int]) -> None:
        if generation != self._generation:
            return
        self._set_counts(counts)

    def _set_counts(self, counts: dict[TaskStatus, int]) -> None:
        for gi, group in enumerate(self._groups):
            count = self._group_count(group.spec, counts)
            if count != group.count or not group.exact:
                group.count, group.exact = count, True
                self._emit_group_changed(gi)

    def _emit_group_changed(self, gi: int) -> None:
        top = self.createIndex(gi, 0, _GROUP_ID)
        self.dataChanged.emit(top, top.siblingAtColumn(len(COLUMNS) - 1))

    def _append_page(self, generation: int, gi: int, page: QueuePage) -> None:
        group = self._groups[gi]
        if generation != self._generation:
            return
        group.loading = group.wanted = False
        group.more = not page.complete
        fresh = [t for t in page.rows if t.id not in self._where]
        if not group.exact and (not group.more or len(group.rows) + len(fresh) > group.count):
            group.count, group.exact = len(group.rows) + len(fresh), not group.more
            self._emit_group_changed(gi)
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
        self.set_claim(task.id, update.claim, announce=False)

        new_gi: int | None = self._group_at[task.status] if update.admitted else None
        new_row = -1
        if new_gi is not None:
            target = self._groups[new_gi]
            rows = [t for t in target.rows if t.id != task.id]
            position = place(rows, task, self._sort, complete=not target.more)
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

        if counts is not None:
            self._set_counts(counts)
        else:
            self._move_counts(old_gi, update)
        self.sig_task_updated.emit(task.id)

    def _move_counts(self, old_gi: int | None, update: RowUpdate) -> None:
        """Counts under a text filter follow the update's own move: one out, one in.

        Where the task was is known when its row was loaded; when it was not, the move's source
        is unknown, and one background count (cancelled by any reload) settles the headers.
        """
        new_gi = self._group_at[update.task.status] if update.admitted else None
        if old_gi == new_gi:
            return
        if old_gi is not None:
            self._groups[old_gi].count = max(0, self._groups[old_gi].count - 1)
            self._emit_group_changed(old_gi)
        if new_gi is not None:
            self._groups[new_gi].count += 1
            self._emit_group_changed(new_gi)
        if old_gi is None and any(g.more for g in self._groups):
            self._count_in_background(self._generation)

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

    @property
    def reloading(self) -> bool:
        """A reload is in flight: the rows loaded now are about to be replaced."""
        return self._refresh_task is not None and not self._refresh_task.done()

    def has_more(self, group_row: int) -> bool:
        """The group has stored tasks beyond its loaded rows."""
        return self._groups[group_row].more

    def request_more(self, group_row: int) -> bool:
        """The view shows the end of this group's rows: load the next page (once at a time).

        Not while a reload is in flight: its rows replace these (a keystroke's page after the
        old filter's last row was a wasted query, rows, a layout and a paint per keystroke);
        the view checks again when the reload lands.
        """
        group = self._groups[group_row]
        if group.loading or not self.has_more(group_row) or self.reloading:
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
        return group.wanted and not group.loading and group.more

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
        read = self._ops.run(
            self._queue.page(group.spec.group, self._filter, self._sort, after=after, limit=self.page_size),
            what=f"Loading more '{group.spec.title}' tasks",
            on_done=lambda page: self._append_page(generation, gi, page),
            on_error=failed,
        )
        self._page_reads.add(read)
        read.add_done_callback(self._page_reads.discard)

    def flags(self, index: Index) -> Qt.ItemFlag:
        """Implements ``QAbstractItemModel::flags``: group headers cannot be selected."""
        if not index.isValid():
            return NO_FLAGS
        if index.internalId() == _GROUP_ID:
            return GROUP_FLAGS
        return TASK_FLAGS

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
        internal = index.internalId()
        if internal == _GROUP_ID:
            group = self._groups[index.row()]
            return group_cell(group.spec, group.count, group.exact, self._icons, index.column(), role)
        if role not in TASK_ROLES:  # size hints, fonts, check states...: asked per cell, never set
            return None
        gi, row = internal - 1, index.row()
        if gi >= len(self._groups) or row >= len(self._groups[gi].rows):
            return None
        return task_cell(self._groups[gi].rows[row], index.column(), role, self._progress, self.claim_note)

    def set_claim(self, task_id: str, claim: ClaimRecord | None, *, announce: bool = True) -> None:
        """What the desk learnt of a task's claim (desktop/views/queue/claims.py); repaints its row."""
        self._claims.pop(task_id, None)
        if claim is not None:
            self._claims[task_id] = claim
        at = self.index_of_task(task_id) if announce else QModelIndex()
        if at.isValid():
            self.dataChanged.emit(at, at.siblingAtColumn(len(COLUMNS) - 1))

    def set_viewers(self, viewers: dict[str, list[str]]) -> None:
        """Who has which task on screen (desktop/views/team/presence.py); repaints the rows that changed."""
        old = self._viewers
        self._viewers = {t: [n for n in names if n != self.reviewer] for t, names in viewers.items()}
        self._viewers = {t: names for t, names in self._viewers.items() if names}
        for task_id in set(old) | set(self._viewers):
            if old.get(task_id) != self._viewers.get(task_id):
                self.set_claim(task_id, self._claims.get(task_id))

    def claim_note(self, task_id: str) -> str | None:
        """ "claimed by X until HH:MM" when someone other than this desk's reviewer holds the task,
        and "👁 Y" for the others looking at it."""
        claim = self._claims.get(task_id)
        notes = [claim.describe()] if claim is not None and claim.reviewer != self.reviewer else []
        if self._viewers.get(task_id):
            notes.append("👁 " + ", ".join(self._viewers[task_id]))
        return " · ".join(notes) or None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Implements ``QAbstractItemModel::sort`` by asking core for the new order."""
        if not 0 <= column < len(COLUMNS):
            return
        wanted = QueueSort(column=COLUMNS[column][1], descending=order == Qt.SortOrder.DescendingOrder)
        if wanted == self._sort:
            return
        self._sort = wanted
        self.refresh()


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Ascending row numbers as (first, last) runs: one Qt notice per contiguous block."""
    runs: list[tuple[int, int]] = []
    for row in rows:
        if runs and runs[-1][1] == row - 1:
            runs[-1] = (runs[-1][0], row)
        else:
            runs.append((row, row))
    return runs
