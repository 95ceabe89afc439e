"""A second analyst on the desk: queue a decided task for another reviewer's independent decision,
and give that decision blind to the first.

The moves are ``core.tasks.judgements``'s, as ``evidence-desk second-review`` makes them:
``2`` (Review → Request second review) queues the task on screen (its decision must stand and
be someone else's to review); Review → Second reviews due (Ctrl+2) lists the tasks waiting for
this reviewer's second review in one band (the Closed and Abandoned groups, and the status
column, would tell the first decision). On such a task the first decision stays hidden (the
task's status, its history with notes and reasons: ``TaskDetailView.set_decision_hidden``) and S,
R or A records the second review (an event; the task does not move). Then the first decision is
shown. Calibration sets the two side by side (inter-analyst agreement, adjudication).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel

from core.domain import FeedbackAction
from core.domain.event_payloads import AnalystJudgement
from core.tasks.judgements import (
    SECOND,
    DueReview,
    blind_for,
    record_judgement,
    request_second_review,
    second_review_due_on,
    second_reviews_due,
)
from desktop.models.queue_model import COL_STATUS
from desktop.presentation import SECOND_REVIEW_GROUPS

if TYPE_CHECKING:
    from desktop.presentation import GroupLook
    from desktop.views.host import DeskHost
    from desktop.views.insight.calibration_cases import CasesFilter

DUE_WORDS = "second reviews due"
_WORDS = {
    FeedbackAction.SATISFIED: "satisfied",
    FeedbackAction.REVISE: "revise",
    FeedbackAction.ABANDON: "abandon",
}


class SecondReview:
    """``intercept`` turns S / R / A on a task awaiting this reviewer's second review into it."""

    def __init__(self, host: DeskHost, cases: CasesFilter) -> None:
        self.host = host
        self.cases = cases
        self.listing = False  # the queue shows the second reviews due (one band, no status column)
        self._bands: tuple[GroupLook, ...] = host.model.looks
        self.banner = QLabel(
            "Second review: decide independently (S satisfied, R revise, A abandon). The first "
            "reviewer's decision is hidden until you record yours.",
            host.widget,
        )
        self.banner.setObjectName("SecondReviewBanner")
        self.banner.setWordWrap(True)
        self.banner.setTextFormat(Qt.TextFormat.PlainText)
        self.banner.setStyleSheet("background: #dcfce7; padding: 6px; border-radius: 4px;")
        self.banner.hide()
        host.add_above_detail(self.banner)
        self.act_request = self._action(
            "Request second review",
            "2",
            self.request,
            "Queue this decided task for another reviewer's decision",
        )
        self.act_due = self._action(
            "Second reviews due",
            "Ctrl+2",
            self.show_due,
            "List the decided tasks waiting for your second review",
        )
        host.sig_dossier_shown.connect(lambda _task_id: self.apply())
        host.model.sig_refreshed.connect(self._follow_filter)

    def _action(self, text: str, key: str, slot: object, tip: str) -> QAction:
        window = self.host.widget
        act = QAction(text, window)
        act.setShortcut(QKeySequence(key))
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        act.setToolTip(f"{tip} ({key})")
        act.triggered.connect(lambda _checked=False: slot())  # type: ignore[operator]
        window.addAction(act)
        self.host.menu("Review").addAction(act)
        return act

    def pending(self) -> bool:
        """The task on screen awaits this reviewer's second review (from its dossier, no query)."""
        task, dossier = self.host.current_task, self.host.detail.dossier
        if task is None or dossier is None or dossier.task.id != task.id:
            return False
        rate = self.host.services.workspace.settings.second_review_rate
        return (
            second_review_due_on(task.id, dossier.feedback, dossier.events, rate, self.host.reviewer)
            is not None
        )

    def apply(self) -> None:
        """Hide or show the first decision for the task now on screen."""
        hide = self.pending()
        detail = self.host.detail
        if hide or detail.decision_hidden:
            detail.set_decision_hidden(hide)
        self.banner.setVisible(hide)

    def intercept(self, action: FeedbackAction) -> bool:
        """Record ``action`` as the second review when one is pending (True), else let it decide."""
        if not self.pending():
            return False
        host = self.host
        task = host.current_task
        assert task is not None
        ws = host.services.workspace

        def recorded(judgement: AnalystJudgement) -> None:
            host.show_info(f"Second review recorded ({judgement.decision}); the first decision is shown.")
            host.load_detail(task.id)  # the reloaded dossier holds the review: the decision shows

        host.ops.run(
            record_judgement(
                ws.store, ws.settings, task.id, _WORDS[action], phase=SECOND, reviewer=host.reviewer
            ),
            what="Recording the second review",
            on_done=recorded,
            on_error=host.refused(task.id),
        )
        return True

    def request(self) -> None:
        host = self.host
        task = host.current_task
        if task is None:
            return
        host.ops.run(
            request_second_review(host.services.workspace.store, task.id, reviewer=host.reviewer),
            what="Queueing a second review",
            on_done=lambda index: host.show_info(
                f"Queued “{task.title}” (attempt {index}) for a second review by another reviewer."
            ),
            on_error=host.refused(task.id),
        )

    def show_due(self) -> None:
        """Narrow the queue to the second reviews due here, in one band without the status column."""
        host = self.host
        ws = host.services.workspace

        def listed(due: list[DueReview]) -> None:
            if not self.listing:
                self._bands = host.model.looks
            self.listing = True
            host.queue.tree.header().setSectionHidden(COL_STATUS, True)
            host.model.set_groups(SECOND_REVIEW_GROUPS)
            self.cases.show(DUE_WORDS, [d.task_id for d in due])
            host.show_info(f"{len(due)} task(s) waiting for your second review.")

        host.ops.run(
            second_reviews_due(ws.store, ws.settings, host.reviewer),
            what="Listing second reviews",
            on_done=listed,
        )

    def _follow_filter(self) -> None:
        """The due list left (its chip cleared, another narrowing chosen): the usual bands return."""
        host = self.host
        if not self.listing or host.model.filter.cases_label == DUE_WORDS:
            return
        self.listing = False
        blind = blind_for(host.services.workspace.settings, host.reviewer)  # blind keeps it hidden
        host.queue.tree.header().setSectionHidden(COL_STATUS, blind)
        host.model.set_groups(self._bands)


__all__ = ["DUE_WORDS", "SecondReview"]
