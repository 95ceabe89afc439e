"""Keys for moving around one task without the mouse: attempts, evidence items, verdict tabs.

Each is a window-level ``QAction``, like S/R/A, so the ``?`` sheet (built from the window's
actions) lists it and a menu can show it. The moves themselves are small functions over the
detail pane's public widgets.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from desktop.views.queue.view import QueueView
from desktop.views.task.detail import TaskDetailView
from desktop.views.task.evidence import EvidenceView


def step_attempt(detail: TaskDetailView, step: int) -> bool:
    """Show the previous (``step`` < 0) or next attempt; False at either end."""
    combo = detail.attempt_combo
    target = combo.currentIndex() + step
    if not combo.isEnabled() or not 0 <= target < combo.count():
        return False
    combo.setCurrentIndex(target)
    return True


def evidence_ids(view: EvidenceView) -> list[str]:
    """The packet's evidence ids in tree order (E1, E2, … as the validator cites them)."""
    found: list[str] = []

    def walk(parent: QModelIndex) -> None:
        for row in range(view.model.rowCount(parent)):
            index = view.model.index(row, 0, parent)
            node = view.model.node(index)
            if node is not None and node.evidence_id and node.evidence_id not in found:
                found.append(node.evidence_id)
            walk(index)

    walk(QModelIndex())
    return found


def step_evidence(view: EvidenceView, step: int) -> bool:
    """Make the next (or previous) evidence item current; from nowhere, the first (or last)."""
    ids = evidence_ids(view)
    if not ids:
        return False
    current = view.current_evidence_id()
    if current in ids:
        target = ids.index(current) + step
        if not 0 <= target < len(ids):
            return False
    else:
        target = 0 if step > 0 else len(ids) - 1
    return view.select_evidence(ids[target])


def show_verdict_tab(detail: TaskDetailView, tab: int) -> None:
    tabs = detail.validator_view.tabs
    if 0 <= tab < tabs.count():
        tabs.setCurrentIndex(tab)


def add_navigation_actions(window: QWidget, detail: TaskDetailView) -> list[QAction]:
    """Register the task-navigation keys on ``window``; returns the actions (for a menu)."""

    def action(text: str, keys: list[str], slot: Callable[[], object], tip: str) -> QAction:
        act = QAction(text, window)
        act.setShortcuts([QKeySequence(k) for k in keys])
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        act.setToolTip(f"{tip} ({' / '.join(keys)})")
        act.triggered.connect(lambda _checked=False: slot())
        window.addAction(act)
        return act

    actions = [
        action("Previous attempt", ["["], lambda: step_attempt(detail, -1), "Show the previous attempt"),
        action("Next attempt", ["]"], lambda: step_attempt(detail, 1), "Show the next attempt"),
        action(
            "Next evidence item", ["N"], lambda: step_evidence(detail.evidence_view, 1), "Next evidence item"
        ),
        action(
            "Previous evidence item",
            ["P"],
            lambda: step_evidence(detail.evidence_view, -1),
            "Previous evidence item",
        ),
    ]
    tabs = detail.validator_view.tabs
    for tab in range(tabs.count()):
        name = tabs.tabText(tab)
        actions.append(
            action(
                f"{name} tab",
                [f"Alt+{tab + 1}"],
                functools.partial(show_verdict_tab, detail, tab),
                f"Show the {name} tab",
            )
        )
    return actions


def advance_to(queue: QueueView, decided_id: str, upcoming: str | None) -> bool:
    """Select ``upcoming`` (chosen when the decision was made) or, if it no longer waits, the next
    task that needs a decision after ``decided_id``; False when none is left."""
    for candidate in (upcoming, queue.next_needing_decision(decided_id)):
        if candidate is None:
            continue
        task = queue.model.task(candidate)
        if task is not None and task.status.requires_user_action and queue.select_task(candidate):
            return True
    return False


__all__ = [
    "add_navigation_actions",
    "advance_to",
    "evidence_ids",
    "show_verdict_tab",
    "step_attempt",
    "step_evidence",
]
