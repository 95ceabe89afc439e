"""Satisfied, revise, abandon: the analyst's decisions on the task on screen, and the runs they start.

Each decision names the task version on screen; a refusal (the task moved on meanwhile) reloads
the task and says so instead of failing quietly. The revise and abandon dialogs are imported
when first opened: the first paint does not need them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from core.domain import FeedbackAction
from core.domain.records import TaskRecord
from core.errors import RefusedAction
from desktop.views.task.navigation import advance_to

if TYPE_CHECKING:
    from desktop.views.window.main_window import MainWindow


class ReviewActions:
    """The window's S / R / A, kept apart from layout so each reads on its own."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window

    def refused(self, task_id: str) -> Callable[[BaseException], bool]:
        """An error handler: a refused action reloads the task and says why; others pass on."""
        w = self.window

        def handle(exc: BaseException) -> bool:
            if not isinstance(exc, RefusedAction):
                return False
            w.show_error(f"{exc}. The task has been reloaded.")
            w.model.update_task(task_id)
            if task_id == w.queue.selected_task_id:
                w._load_detail(task_id)
            return True

        return handle

    def satisfied(self) -> None:
        w = self.window
        task = w.current_task
        if task is None or not w.act_satisfied.isEnabled() or not w.claims.may_act(task):
            return
        upcoming = w.queue.next_needing_decision(task.id)
        w.ops.run(
            w.services.review.feedback(task.id, FeedbackAction.SATISFIED, expected_version=task.version),
            what="Closing the task",
            on_done=lambda _t: self.decided(task, f"Closed: {task.title}", upcoming),
            on_error=self.refused(task.id),
        )

    def recommended_prompt(self) -> str:
        dossier = self.window.dossier
        if dossier is None or not dossier.validations:
            return ""
        latest = dossier.validations[-1]
        value = latest.result.get("recommended_revision_prompt") if isinstance(latest.result, dict) else None
        return value if isinstance(value, str) else ""

    def revise(self) -> None:
        w = self.window
        task = w.current_task
        if task is None or not w.act_revise.isEnabled() or not w.claims.may_act(task):
            return
        from desktop.dialogs.revise import ReviseDialog

        dialog = ReviseDialog(task.title, self.recommended_prompt(), w)
        dialog.accepted.connect(lambda: self.send_revision(task, dialog.prompt, dialog.note))
        w.open_dialog(dialog)

    def send_revision(self, task: TaskRecord, prompt: str, note: str | None) -> None:
        w = self.window

        async def revise_and_run() -> TaskRecord:
            updated = await w.services.review.feedback(
                task.id, FeedbackAction.REVISE, expected_version=task.version, prompt=prompt, note=note
            )
            self.watch_run(task.id)
            return updated

        upcoming = w.queue.next_needing_decision(task.id)
        w.ops.run(
            revise_and_run(),
            what="Sending the revision",
            on_done=lambda _t: self.decided(task, f"Revision sent: {task.title}", upcoming),
            on_error=self.refused(task.id),
        )

    def abandon(self) -> None:
        w = self.window
        task = w.current_task
        if task is None or not w.act_abandon.isEnabled() or not w.claims.may_act(task):
            return
        from desktop.dialogs.confirm import ConfirmDialog

        running = task.status.is_execution_active
        dialog = ConfirmDialog(
            "Abandon task",
            "Abandon this task?"
            + (" Its run is cancelled first." if running else "")
            + " The task and its evidence stay in the workspace.",
            "Abandon",
            w,
            subject=task.title,
        )
        dialog.accepted.connect(lambda: self.send_abandon(task))
        w.open_dialog(dialog)

    def send_abandon(self, task: TaskRecord) -> None:
        w = self.window
        upcoming = w.queue.next_needing_decision(task.id)
        shown = w.current_task
        current = shown if shown is not None and shown.id == task.id else task
        w.ops.run(
            w.services.review.feedback(task.id, FeedbackAction.ABANDON, expected_version=current.version),
            what="Abandoning the task",
            on_done=lambda _t: self.decided(task, f"Abandoned: {task.title}", upcoming),
            on_error=self.refused(task.id),
        )

    def decided(self, task: TaskRecord, message: str, upcoming: str | None) -> None:
        """After a decision: say so, and (Settings: auto_advance) select the next task needing one."""
        w = self.window
        w.show_info(message)
        if w.workspace.settings.auto_advance and w.queue.selected_task_id == task.id:
            advance_to(w.queue, task.id, upcoming)

    def watch_run(self, task_id: str) -> None:
        """Start the run in this process; its errors are reported like any other operation's."""
        w = self.window
        handle = w.services.tasks.start(task_id)

        async def follow() -> TaskRecord:
            return await handle

        w.ops.run(follow(), what="Running the task", on_error=self.refused(task_id))
