"""Blind review on the desk: the validator's verdict stays hidden until the analyst's first judgement.

With the ``blind_review`` setting (or the reviewer named in ``blind_reviewers``), a task awaiting a
decision shows its answer and evidence but none of the verdict (``TaskDetailView.set_verdict_hidden``)
and the queue hides its score, outcome, category and status columns and bands tasks awaiting a
decision in one "To judge" group (needs review against awaiting feedback would tell the verdict). The first S, R or A records
a blind judgement (``core.tasks.judgements``, an event; the task does not move), then the verdict
is revealed and the same keys decide as usual: confirm or change. Calibration compares the two
(the anchoring rate). Keyboard-first: no extra key to learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from core.domain import FeedbackAction
from core.domain.event_codec import decode_as
from core.domain.event_payloads import AnalystJudgement
from core.domain.facts import EventKind
from core.tasks.judgements import BLIND, blind_for, record_judgement
from core.tasks.review import allowed_actions
from desktop.models.queue_model import COL_CATEGORY, COL_OUTCOME, COL_SCORE, COL_STATUS
from desktop.presentation import BLIND_GROUPS

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

_WORDS = {
    FeedbackAction.SATISFIED: "satisfied",
    FeedbackAction.REVISE: "revise",
    FeedbackAction.ABANDON: "abandon",
}
_VERDICT_COLUMNS = (COL_SCORE, COL_OUTCOME, COL_CATEGORY, COL_STATUS)


class BlindReview:
    """``intercept`` turns the first S / R / A on a blind task into the blind judgement."""

    def __init__(self, host: DeskHost) -> None:
        self.host = host
        self.banner = QLabel(
            "Blind review: the validator's verdict is hidden. Judge the answer first "
            "(S satisfied, R revise, A abandon); then the verdict is shown and you decide.",
            host.widget,
        )
        self.banner.setObjectName("BlindReviewBanner")
        self.banner.setWordWrap(True)
        self.banner.setTextFormat(Qt.TextFormat.PlainText)
        self.banner.setStyleSheet("background: #e0e7ff; padding: 6px; border-radius: 4px;")
        self.banner.hide()
        host.add_above_detail(self.banner)
        host.sig_dossier_shown.connect(lambda _task_id: self.apply())
        if self.enabled:
            header = host.queue.tree.header()
            for col in _VERDICT_COLUMNS:
                header.setSectionHidden(col, True)
            # "Needs review" against "Awaiting feedback" would tell the verdict: one group instead.
            host.model.set_groups(BLIND_GROUPS)

    @property
    def enabled(self) -> bool:
        return blind_for(self.host.services.workspace.settings, self.host.reviewer)

    def pending(self) -> bool:
        """The task on screen awaits this reviewer's blind judgement: blind mode is on, it awaits a
        decision, and its latest attempt has no blind judgement by them yet."""
        task, dossier = self.host.current_task, self.host.detail.dossier
        if not self.enabled or task is None or dossier is None or dossier.task.id != task.id:
            return False
        if not allowed_actions(dossier.task) or not task.status.requires_user_action or not dossier.attempts:
            return False
        latest = max(dossier.attempts, key=lambda a: a.index)
        for e in dossier.events:
            if e.kind == EventKind.ANALYST_JUDGEMENT_RECORDED:
                j = decode_as(e, AnalystJudgement)
                if (
                    j is not None
                    and j.phase == BLIND
                    and j.attempt_id == latest.id
                    and j.reviewer == self.host.reviewer
                ):
                    return False
        return True

    def apply(self) -> None:
        """Hide or reveal the verdict for the task now on screen."""
        hide = self.pending()
        if hide or self.host.detail.verdict_hidden:  # nothing to do (no second render) when not blind
            self.host.detail.set_verdict_hidden(hide)
        self.banner.setVisible(hide)

    def intercept(self, action: FeedbackAction) -> bool:
        """Record ``action`` as the blind judgement when one is pending (True), else let it decide."""
        if not self.pending():
            return False
        host = self.host
        task = host.current_task
        assert task is not None
        ws = host.services.workspace

        def revealed(_judgement: AnalystJudgement) -> None:
            host.show_info(
                f"Blind judgement recorded ({_WORDS[action]}). The verdict is shown: "
                "press S, R or A to decide (the same key confirms)."
            )
            host.load_detail(task.id)  # the reloaded dossier holds the judgement: the verdict shows

        host.ops.run(
            record_judgement(
                ws.store, ws.settings, task.id, _WORDS[action], phase=BLIND, reviewer=host.reviewer
            ),
            what="Recording the blind judgement",
            on_done=revealed,
            on_error=host.refused(task.id),
        )
        return True


__all__ = ["BlindReview"]
