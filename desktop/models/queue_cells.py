"""What the queue shows in each cell: the columns, the roles, and a task's or group's answer per role.

Split from the model (desktop/models/queue_model.py), which loads and moves rows: these functions
are pure (a task, a column, a role in; a value out), so the view's thousands of ``data`` calls per
paint stay cheap and the answers are tested without a store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QIcon

from core.domain.queue import SortColumn
from core.domain.records import TaskRecord
from core.events import RunProgress
from core.tasks.policy import read_only_reason
from desktop.presentation import NEEDS_REVIEW_BAND, NEEDS_REVIEW_TEXT, STATUS_LABELS, GroupLook, outcome_cell

READ_ONLY_MARK = "[read-only]"

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

# The view asks ``data`` and ``flags`` thousands of times per reload (every visible cell, every
# role, on each layout and paint): members are looked up once here, not per call, and a task
# row answers the roles it knows at once and nothing else.
_DISPLAY = Qt.ItemDataRole.DisplayRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole
_FOREGROUND = Qt.ItemDataRole.ForegroundRole
_BACKGROUND = Qt.ItemDataRole.BackgroundRole
_DECORATION = Qt.ItemDataRole.DecorationRole
_FONT = Qt.ItemDataRole.FontRole
_ALIGNMENT = Qt.ItemDataRole.TextAlignmentRole
# What the model asks of this module for every cell: the roles a task row answers, and the flags.
TASK_ROLES = frozenset(
    {_DISPLAY, _TOOLTIP, _FOREGROUND, _ALIGNMENT, TASK_ID_ROLE, TASK_ROLE, STATUS_ROLE, PROGRESS_ROLE}
)
NO_FLAGS = Qt.ItemFlag.NoItemFlags
GROUP_FLAGS = Qt.ItemFlag.ItemIsEnabled
TASK_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_BAND = QColor(NEEDS_REVIEW_BAND)
_BAND_TEXT = QColor(NEEDS_REVIEW_TEXT)


def group_cell(
    spec: GroupLook, count: int, exact: bool, icons: Mapping[str, QIcon], column: int, role: int
) -> Any:
    """A group header's answer: its title with the count ("≥ N" while only a lower bound is known)."""
    review = spec.key in ("needs_review", "to_judge")  # what the analyst is there for
    if role == _DISPLAY and column == 0:
        return f"{spec.title}  ({count if exact else f'≥ {count}'})"
    if role == _TOOLTIP:
        return f"{spec.title}: {spec.hint}"
    if role == _DECORATION and column == 0:
        return icons.get(spec.key)
    if role == _FONT:
        font = QFont()
        font.setBold(True)
        return font
    if role == _BACKGROUND and review:
        return _BAND
    if role == _FOREGROUND and review:
        return _BAND_TEXT
    if role == GROUP_KEY_ROLE:
        return spec.key
    return None


def task_cell(
    task: TaskRecord,
    column: int,
    role: int,
    progress: Mapping[str, RunProgress],
    claim_note: Callable[[str], str | None],
) -> Any:
    """A task row's answer for one cell and role (``TASK_ROLES`` only; the model filters)."""
    if role == _DISPLAY:
        note = claim_note(task.id) if column == COL_STATUS else None
        return display_text(task, column, progress) + (f" · {note}" if note else "")
    if role == TASK_ID_ROLE:
        return task.id
    if role == TASK_ROLE:
        return task
    if role == STATUS_ROLE:
        return task.status.value
    if role == PROGRESS_ROLE:
        return progress.get(task.id)
    if column == COL_OUTCOME and role in (_TOOLTIP, _FOREGROUND):
        cell = outcome_cell(task.validation_outcome, task.latest_validation_status)  # short words shown
        if role == _TOOLTIP:
            return cell.full or None
        return QColor(cell.colour) if cell.colour else None
    if role == _TOOLTIP:
        if column == COL_UPDATED:
            return local_time(task.updated_at, full=True)
        why = read_only_reason(task)
        notes = [f"{why[0].upper()}{why[1:]}." if why else "", claim_note(task.id) or ""]
        head = "\n".join(n for n in notes if n)
        return f"{head}\n\n{task.text[:600]}" if head else task.text[:600]
    if role == _ALIGNMENT and column in (COL_SCORE, COL_ATTEMPTS):
        return _RIGHT
    return None


def display_text(task: TaskRecord, column: int, progress: Mapping[str, RunProgress]) -> str:
    """The cell's text, without the claim note the status column adds."""
    if column == COL_TITLE:  # imported tasks are marked where the analyst scans, as `list` does
        return f"{READ_ONLY_MARK} {task.title}" if task.read_only else task.title
    if column == COL_STATUS:
        label = STATUS_LABELS[task.status]
        running = progress.get(task.id)
        if running and task.status.is_execution_active:
            bits = [f"attempt {running.attempt}"]
            if running.iteration:
                bits.append(f"iter {running.iteration}")
            if running.tool:
                bits.append(running.tool)
            label = f"{label} · {' · '.join(bits)}"
        return label
    if column == COL_OUTCOME:
        return outcome_cell(task.validation_outcome, task.latest_validation_status).short
    if column == COL_SCORE:
        return "—" if task.latest_score is None else f"{task.latest_score:.2f}"
    if column == COL_CATEGORY:
        return task.latest_category or ""
    if column == COL_ATTEMPTS:
        return str(task.attempt_count)
    if column == COL_UPDATED:
        return local_time(task.updated_at)
    return ""


def local_time(value: datetime, *, full: bool = False) -> str:
    """Today's rows show the time, older rows the day: the column stays narrow for the title.

    Every paint asks for every visible row's time (a few thousand times per keystroke); the
    answer only changes with the value and the day, so it is remembered per both.
    """
    return _local_time_on(value, full, date.today())


@lru_cache(maxsize=4096)
def _local_time_on(value: datetime, full: bool, today: date) -> str:
    try:
        local = value.astimezone()
    except (ValueError, OverflowError):
        return str(value)
    if full:
        return local.strftime("%Y-%m-%d %H:%M:%S")
    if local.date() == today:
        return local.strftime("%H:%M")
    return local.strftime("%d %b %Y") if local.year != today.year else local.strftime("%d %b")
