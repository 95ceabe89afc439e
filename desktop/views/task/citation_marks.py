"""Marking the validator's citations on the desk: + marks the current citation right, − wrong.

Keyboard first: the keys are window-level actions (so the ``?`` sheet lists them and the Review
menu shows them), acting on the citation list's current row, or its first row when none is
current; after a mark the next row becomes current, so + + − walks a verdict's citations. Each
mark is one ``core.tasks.citation_marks.mark_citation`` call (a ``citation_marked`` event); the
latest mark on a citation stands, and the list's "Your mark" column shows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

from core.domain.records import EventRecord
from core.tasks.citation_marks import MARKABLE, mark_citation, standing_marks

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

KEYS = {"right": ["+", "="], "wrong": ["-"]}  # "=" is + without Shift on most layouts


class CitationMarks:
    """The two mark actions and what they do; ``act_right`` / ``act_wrong`` for menus and tests."""

    def __init__(self, host: DeskHost) -> None:
        self.host = host
        self.act_right = self._action("Mark citation right", "right", "The cited quote supports the claim")
        self.act_wrong = self._action("Mark citation wrong", "wrong", "The cited quote does not support it")
        self.written: list[EventRecord] = []  # marks made here, until a loaded dossier holds them
        host.sig_dossier_shown.connect(self._catch_up)

    def _catch_up(self, task_id: str) -> None:
        """A dossier read while a mark was being written lacks it: add the marks made here that it
        does not hold, so the list never shows a mark undone that stands in the store."""
        dossier, listing = self.host.detail.dossier, self.host.detail.validator_view.citations
        if dossier is None or dossier.task.id != task_id:
            return
        held = {e.id for e in dossier.events}
        missing = [e for e in self.written if e.task_id == task_id and e.id not in held]
        self.written = [e for e in self.written if e.task_id != task_id or e.id not in held]
        if not missing:
            return
        dossier.events.extend(missing)
        attempt = self.host.detail.attempt_index
        validation = dossier.validation_for(attempt) if attempt is not None else None
        if validation is not None:
            listing.set_marks(standing_marks(dossier.events, validation.id))

    def _action(self, text: str, mark: str, tip: str) -> QAction:
        window = self.host.widget
        act = QAction(text, window)
        act.setShortcuts([QKeySequence(k) for k in KEYS[mark]])
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        act.setToolTip(f"{tip} ({' / '.join(KEYS[mark])})")
        act.triggered.connect(lambda _checked=False: self.mark(mark))
        window.addAction(act)
        self.host.menu("Review").addAction(act)
        return act

    def mark(self, mark: str) -> bool:
        """Mark the current citation of the verdict on screen; False when there is none to mark."""
        host = self.host
        detail = host.detail
        task, dossier = host.current_task, detail.dossier
        listing = detail.validator_view.citations
        if task is None or dossier is None or detail.verdict_hidden or not listing.citations():
            return False
        if task.status not in MARKABLE:
            host.show_error("Citations are marked on a task awaiting a decision or decided.")
            return False
        current = listing.currentItem()
        row = listing.indexOfTopLevelItem(current) if current is not None else 0
        attempt = detail.attempt_index
        shown = dossier.task.id

        def marked(event: EventRecord) -> None:
            self.written.append(event)
            if detail.dossier is not dossier or detail.attempt_index != attempt:
                return  # another task or attempt is on screen: it reads its own marks when loaded
            dossier.events.append(event)  # so a re-render of this dossier keeps the mark
            listing.set_marks({**listing.marks, row: mark})
            following = listing.topLevelItem(min(row + 1, listing.topLevelItemCount() - 1))
            if following is not None:
                listing.setCurrentItem(following)

        host.ops.run(
            mark_citation(
                host.services.workspace.store, shown, row, mark, reviewer=host.reviewer, attempt_index=attempt
            ),
            what="Marking the citation",
            on_done=marked,
            on_error=host.refused(shown),
        )
        return True


__all__ = ["KEYS", "CitationMarks"]
