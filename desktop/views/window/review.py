"""The analyst's decisions on the task on screen: S / R / A, the runs they start, and the moves
beyond them (decisions with a note, reopen, undo).

Each decision names the task version on screen; a refusal (the task moved on meanwhile) reloads
the task and says so instead of failing quietly. Every move is one ``ReviewService`` call, so the
desk adds no rule of its own. Both classes work through the ``DeskHost`` and the decision actions
they are handed, never the window itself. The revise and abandon dialogs are imported when first
opened: the first paint does not need them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QMenu

from core.domain import FeedbackAction
from core.domain.records import TaskRecord
from core.errors import RefusedAction
from core.tasks.review import can_reopen, read_only_reason
from desktop.dialogs.note import NoteDialog
from desktop.presentation import STATUS_LABELS
from desktop.views.task.navigation import advance_to

if TYPE_CHECKING:
    from core.tasks.review import ReviewService
    from desktop.dialogs.reason_picker import ReasonPicker
    from desktop.views.host import DeskHost
    from desktop.views.queue.claims import ClaimKeeper
    from desktop.views.task.blind import BlindReview
    from desktop.views.task.second_review import SecondReview

__all__ = ["Decisions", "ReviewActions", "ReviewMoves"]

Decisions = Mapping[FeedbackAction, QAction]
"""The window's S / R / A actions: enabled for what ``allowed_actions`` allows the task on screen."""


class ReviewActions:
    """The window's S / R / A, kept apart from layout so each reads on its own."""

    def __init__(self, host: DeskHost, claims: ClaimKeeper, decisions: Decisions) -> None:
        self.host = host
        self.claims = claims
        self.decisions = decisions
        self.blind: BlindReview | None = (
            None  # set by the window: the first S / R / A may be a blind judgement
        )
        self.second: SecondReview | None = None  # set by the window: S / R / A may be a second review

    def _may(self, action: FeedbackAction) -> TaskRecord | None:
        """The task on screen if ``action`` is enabled for it and the analyst may act on it."""
        task = self.host.current_task
        if task is not None and self.second is not None and self.second.intercept(action):
            return None  # recorded as the second review (no claim: the task does not move)
        if task is None or not self.decisions[action].isEnabled() or not self.claims.may_act(task):
            return None
        if self.blind is not None and self.blind.intercept(action):
            return None  # recorded as the blind judgement; the verdict is revealed, the next key decides
        return task

    def refused(self, task_id: str) -> Callable[[BaseException], bool]:
        """An error handler: a refused action reloads the task and says why; others pass on."""
        host = self.host

        def handle(exc: BaseException) -> bool:
            if not isinstance(exc, RefusedAction):
                return False
            host.show_error(f"{exc}. The task has been reloaded.")
            host.model.update_task(task_id)
            if task_id == host.queue.selected_task_id:
                host.load_detail(task_id)
            return True

        return handle

    def satisfied(self) -> None:
        host = self.host
        task = self._may(FeedbackAction.SATISFIED)
        if task is None:
            return
        upcoming = host.queue.next_needing_decision(task.id)
        host.ops.run(
            host.services.review.feedback(task.id, FeedbackAction.SATISFIED, expected_version=task.version),
            what="Closing the task",
            on_done=lambda _t: self.decided(task, f"Closed: {task.title}", upcoming),
            on_error=self.refused(task.id),
        )

    def recommended_prompt(self) -> str:
        dossier = self.host.detail.dossier
        if dossier is None or not dossier.validations:
            return ""
        latest = dossier.validations[-1]
        value = latest.result.get("recommended_revision_prompt") if isinstance(latest.result, dict) else None
        return value if isinstance(value, str) else ""

    def revise(self) -> None:
        task = self._may(FeedbackAction.REVISE)
        if task is None:
            return
        from desktop.dialogs.revise import ReviseDialog

        dialog = ReviseDialog(task.title, self.recommended_prompt(), self.host.widget)
        picker = self._picker(dialog)
        dialog.accepted.connect(lambda: self.send_revision(task, dialog.prompt, dialog.note, picker.reason))
        self.host.open_dialog(dialog)

    def _picker(self, dialog: QDialog) -> ReasonPicker:
        """The reason codes, one key each, above the dialog's buttons."""
        from core.domain.reasons import DEFAULT_REASONS, load_reasons
        from desktop.dialogs.reason_picker import attach_reason_picker

        try:
            reasons = load_reasons(self.host.services.workspace.settings.reasons)
        except ValueError as exc:  # a broken reasons file: say so, offer the defaults meanwhile
            self.host.show_error(str(exc))
            reasons = DEFAULT_REASONS
        return attach_reason_picker(dialog, reasons)

    def send_revision(
        self, task: TaskRecord, prompt: str, note: str | None, reason: str | None = None
    ) -> None:
        host = self.host

        async def revise_and_run() -> TaskRecord:
            updated = await host.services.review.feedback(
                task.id, FeedbackAction.REVISE, expected_version=task.version, prompt=prompt, note=note,
                reason=reason,
            )  # fmt: skip
            self.watch_run(task.id)
            return updated

        upcoming = host.queue.next_needing_decision(task.id)
        host.ops.run(
            revise_and_run(),
            what="Sending the revision",
            on_done=lambda _t: self.decided(task, f"Revision sent: {task.title}", upcoming),
            on_error=self.refused(task.id),
        )

    def abandon(self) -> None:
        task = self._may(FeedbackAction.ABANDON)
        if task is None:
            return
        from desktop.dialogs.confirm import ConfirmDialog

        running = task.status.is_execution_active
        dialog = ConfirmDialog(
            "Abandon task",
            "Abandon this task?"
            + (" Its run is cancelled first." if running else "")
            + " The task and its evidence stay in the workspace.",
            "Abandon",
            self.host.widget,
            subject=task.title,
        )
        picker = self._picker(dialog)
        dialog.accepted.connect(lambda: self.send_abandon(task, picker.reason))
        self.host.open_dialog(dialog)

    def send_abandon(self, task: TaskRecord, reason: str | None = None) -> None:
        host = self.host
        upcoming = host.queue.next_needing_decision(task.id)
        shown = host.current_task
        current = shown if shown is not None and shown.id == task.id else task
        host.ops.run(
            host.services.review.feedback(
                task.id, FeedbackAction.ABANDON, expected_version=current.version, reason=reason
            ),
            what="Abandoning the task",
            on_done=lambda _t: self.decided(task, f"Abandoned: {task.title}", upcoming),
            on_error=self.refused(task.id),
        )

    def decided(self, task: TaskRecord, message: str, upcoming: str | None) -> None:
        """After a decision: say so, and (Settings: auto_advance) select the next task needing one."""
        host = self.host
        host.show_info(message)
        if host.services.workspace.settings.auto_advance and host.queue.selected_task_id == task.id:
            advance_to(host.queue, task.id, upcoming)

    def watch_run(self, task_id: str) -> None:
        """Start the run in this process; its errors are reported like any other operation's."""
        host = self.host
        handle = host.services.tasks.start(task_id)

        async def follow() -> TaskRecord:
            return await handle

        host.ops.run(follow(), what="Running the task", on_error=self.refused(task_id))


class ReviewMoves:
    """Undo, reopen and noted decisions; built once, updated with the S / R / A actions."""

    @property
    def review(self) -> ReviewService:
        """Asked when first needed: building it loads the task service and the agent."""
        return self.host.services.review

    def __init__(self, host: DeskHost, menu: QMenu, decisions: Decisions) -> None:
        self.host = host
        self.decisions = decisions
        window = host.widget

        def action(text: str, keys: str, slot: Callable[[], None], tip: str) -> QAction:
            act = QAction(text, window)
            act.setShortcut(QKeySequence(keys))
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.setToolTip(f"{tip} ({keys})")
            act.triggered.connect(lambda _checked=False: slot())
            window.addAction(act)
            menu.addAction(act)
            return act

        menu.addSeparator()
        self.act_satisfied_note = action(
            "Satisfied with note…", "Shift+S", self.satisfied_with_note, "Close the task with a note"
        )
        self.act_abandon_note = action(
            "Abandon with note…", "Shift+A", self.abandon_with_note, "Give up on the task, with a note"
        )
        self.act_reopen = action(
            "Reopen…", "O", self.reopen, "Reopen a closed or abandoned task, with a reason"
        )
        self.act_undo = action("Undo last decision", "Ctrl+Z", self.undo, "Take back your last decision")
        self._tips = {act: act.toolTip() for act in decisions.values()}

    def update(self, task: TaskRecord | None) -> None:
        """Called from the window's action-enabling code: read-only says why, reopen follows core."""
        why = read_only_reason(task) if task is not None else None
        for act, tip in self._tips.items():
            act.setToolTip(f"Disabled: {why}" if why else tip)
        self.act_satisfied_note.setEnabled(self.decisions[FeedbackAction.SATISFIED].isEnabled())
        self.act_abandon_note.setEnabled(self.decisions[FeedbackAction.ABANDON].isEnabled())
        self.act_reopen.setEnabled(task is not None and can_reopen(task))
        decided = self.review.last_decided if self.host.services.review_started else None
        self.act_undo.setEnabled(decided is not None or (task is not None and why is None))

    # ------------------------------------------------------------------ moves
    def satisfied_with_note(self) -> None:
        self._noted(FeedbackAction.SATISFIED, "Close", "Closing the task", "Closed")

    def abandon_with_note(self) -> None:
        self._noted(FeedbackAction.ABANDON, "Abandon", "Abandoning the task", "Abandoned")

    def _noted(self, action: FeedbackAction, button: str, what: str, done: str) -> None:
        host = self.host
        task = host.current_task
        if task is None or not self.decisions[action].isEnabled():
            return
        dialog = NoteDialog(
            f"{done}: note", f"{button} “{task.title}”.", button, required=False, parent=host.widget
        )

        def send() -> None:
            host.ops.run(
                self.review.feedback(task.id, action, expected_version=task.version, note=dialog.note),
                what=what,
                on_done=lambda _t: host.show_info(f"{done}: {task.title}"),
                on_error=host.refused(task.id),
            )

        dialog.accepted.connect(send)
        host.open_dialog(dialog)

    def reopen(self) -> None:
        host = self.host
        task = host.current_task
        if task is None or not can_reopen(task):
            return
        dialog = NoteDialog(
            "Reopen task", f"Reopen “{task.title}”. Why?", "Reopen", required=True, parent=host.widget
        )

        def send() -> None:
            reason = dialog.note or ""
            host.ops.run(
                self.review.reopen(task.id, reason=reason, expected_version=task.version),
                what="Reopening the task",
                on_done=lambda t: host.show_info(f"Reopened: {t.title} ({STATUS_LABELS[t.status]})"),
                on_error=host.refused(task.id),
            )

        dialog.accepted.connect(send)
        host.open_dialog(dialog)

    def undo(self) -> None:
        """Undo the selected task's last decision; with nothing selected, this desk's last decision.

        Undo per task: aimed at the desk's last decision wherever the selection was, one refused
        undo (a revision whose run had moved the task on) stayed refused for every task selected
        after it, and its message named a task not on screen."""
        host = self.host
        current = host.current_task
        target = current.id if current is not None else self.review.last_decided
        if target is None:
            return

        def done(task: Any) -> None:
            host.show_info(f"Undone: {task.title} is back in {STATUS_LABELS[task.status]}")
            host.queue.select_task(task.id)

        host.ops.run(
            self.review.undo(target),
            what="Undoing the last decision",
            on_done=done,
            on_error=host.refused(target),
        )
