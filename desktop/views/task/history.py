"""The History tab and the review moves beyond S/R/A: undo (Ctrl+Z), reopen, decisions with notes.

Kept out of ``main_window`` and ``detail`` (which only hold the hook lines): the timeline comes from
``core.tasks.history.case_history``, and every move is one ``ReviewService`` call, so the desk adds
no rule of its own. All text reaches the screen as plain text (item text, QPlainTextEdit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.domain import FeedbackAction
from core.domain.records import AttemptRecord, TaskRecord
from core.tasks.dossier import TaskDossier
from core.tasks.history import EntryKind, case_history
from core.tasks.review import ReviewService, can_reopen, read_only_reason

if TYPE_CHECKING:
    from desktop.views.window.main_window import MainWindow


class HistoryView(QTreeWidget):
    """One row per recorded move, oldest first: time, who, what, note or prompt."""

    COLUMNS = ("Time", "Who", "What", "Note / prompt")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setColumnCount(len(self.COLUMNS))
        self.setHeaderLabels(list(self.COLUMNS))
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        for column, width in enumerate((128, 64, 270)):  # the note gets the rest
            self.setColumnWidth(column, width)

    def set_dossier(self, dossier: TaskDossier | None) -> None:
        self.clear()
        if dossier is None:
            return
        for entry in case_history(dossier):
            extra = " · ".join(
                x for x in (entry.note, f"prompt: {entry.prompt}" if entry.prompt else None) if x
            )
            when = entry.time.astimezone().strftime("%Y-%m-%d %H:%M")
            item = QTreeWidgetItem([when, entry.actor, entry.summary, extra.replace("\n", " ")])
            for column, text in enumerate((when, entry.actor, entry.summary, extra)):
                item.setToolTip(column, text)
            if entry.kind is EntryKind.DECISION:
                font = item.font(2)
                font.setBold(True)
                item.setFont(2, font)
            self.addTopLevelItem(item)

    def rows(self) -> list[tuple[str, str, str, str]]:
        """The visible text of every row (tests read the tab the way an analyst would)."""
        out = []
        for i in range(self.topLevelItemCount()):
            item = self.topLevelItem(i)
            assert item is not None
            out.append((item.text(0), item.text(1), item.text(2), item.text(3)))
        return out


def attempt_to_show(dossier: TaskDossier) -> AttemptRecord | None:
    """The attempt the detail pane opens on: the latest, unless it produced nothing while an earlier
    answer is back for review (a failed revision): then that answer, which is what is decided on."""
    attempts = sorted(dossier.attempts, key=lambda a: a.index)
    if not attempts:
        return None
    latest = attempts[-1]
    if (latest.final_output or "").strip() or not dossier.task.status.requires_user_action:
        return latest
    usable = [a for a in attempts if (a.final_output or "").strip()]
    return usable[-1] if usable else latest


def failure_notice(dossier: TaskDossier) -> str:
    """One line above the answer: a read-only task says where it came from; a failed revision says
    which answer is under review; "" otherwise."""
    why = read_only_reason(dossier.task)
    if why is not None:
        return why[0].upper() + why[1:]
    shown = attempt_to_show(dossier)
    latest = max(dossier.attempts, key=lambda a: a.index, default=None)
    if shown is None or latest is None or shown is latest:
        return ""
    return (
        f"Attempt {latest.index} produced no usable answer ({latest.finish_reason or latest.state.value}); "
        f"the answer of attempt {shown.index} is back for review."
    )


class _NoteEdit(QPlainTextEdit):
    sig_submit = Signal()
    """Ctrl+Enter (either Enter key) was pressed: submit the dialog instead of adding a line."""

    def keyPressEvent(self, event: QKeyEvent) -> None:
        submit = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if submit and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.sig_submit.emit()
            return
        super().keyPressEvent(event)


class NoteDialog(QDialog):
    """A note (or a reason) typed straight away: the text box has focus, Ctrl+Enter submits,
    Tab moves to the buttons. ``required`` refuses an empty note."""

    def __init__(
        self, title: str, intro: str, button: str, *, required: bool, parent: QWidget | None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(480, 220)
        self.required = required
        label = QLabel(intro)
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setWordWrap(True)
        self.note_edit = _NoteEdit()
        self.note_edit.setTabChangesFocus(True)
        self.note_edit.setPlaceholderText("required" if required else "optional note for the record")
        self.error_label = QLabel()
        self.error_label.setStyleSheet("color: #c0392b;")
        self.error_label.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.addButton(button, QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self._try_accept)
        self.buttons.rejected.connect(self.reject)
        self.note_edit.sig_submit.connect(self._try_accept)
        layout = QVBoxLayout(self)
        layout.addWidget(label)
        layout.addWidget(self.note_edit, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.note_edit.setFocus(Qt.FocusReason.OtherFocusReason)

    @property
    def note(self) -> str | None:
        return self.note_edit.toPlainText().strip() or None

    def _try_accept(self) -> None:
        if self.required and not self.note:
            self.error_label.setText("Say why.")
            self.error_label.show()
            return
        self.accept()


class ReviewMoves:
    """Undo, reopen and noted decisions for ``window``; built once, updated with the actions."""

    @property
    def review(self) -> ReviewService:
        """Asked when first needed: building it loads the task service and the agent."""
        return self.window.services.review

    def __init__(self, window: MainWindow, menu: QMenu) -> None:
        self.window = window

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
        self._tips = {
            act: act.toolTip() for act in (window.act_satisfied, window.act_revise, window.act_abandon)
        }

    def update(self, task: TaskRecord | None) -> None:
        """Called from the window's action-enabling code: read-only says why, reopen follows core."""
        w = self.window
        why = read_only_reason(task) if task is not None else None
        for act, tip in self._tips.items():
            act.setToolTip(f"Disabled: {why}" if why else tip)
        self.act_satisfied_note.setEnabled(w.act_satisfied.isEnabled())
        self.act_abandon_note.setEnabled(w.act_abandon.isEnabled())
        self.act_reopen.setEnabled(task is not None and can_reopen(task))
        decided = self.review.last_decided if self.window.services.review_started else None
        self.act_undo.setEnabled(decided is not None or (task is not None and why is None))

    # ------------------------------------------------------------------ moves
    def satisfied_with_note(self) -> None:
        self._noted(FeedbackAction.SATISFIED, "Close", "Closing the task", "Closed")

    def abandon_with_note(self) -> None:
        self._noted(FeedbackAction.ABANDON, "Abandon", "Abandoning the task", "Abandoned")

    def _noted(self, action: FeedbackAction, button: str, what: str, done: str) -> None:
        w = self.window
        task = w.current_task
        enabled = w.act_satisfied if action is FeedbackAction.SATISFIED else w.act_abandon
        if task is None or not enabled.isEnabled():
            return
        dialog = NoteDialog(f"{done}: note", f"{button} “{task.title}”.", button, required=False, parent=w)

        def send() -> None:
            w.ops.run(
                self.review.feedback(task.id, action, expected_version=task.version, note=dialog.note),
                what=what,
                on_done=lambda _t: w.show_info(f"{done}: {task.title}"),
                on_error=w._refused(task.id),
            )

        dialog.accepted.connect(send)
        w._open(dialog)

    def reopen(self) -> None:
        w = self.window
        task = w.current_task
        if task is None or not can_reopen(task):
            return
        dialog = NoteDialog("Reopen task", f"Reopen “{task.title}”. Why?", "Reopen", required=True, parent=w)

        def send() -> None:
            reason = dialog.note or ""
            w.ops.run(
                self.review.reopen(task.id, reason=reason, expected_version=task.version),
                what="Reopening the task",
                on_done=lambda t: w.show_info(f"Reopened: {t.title} ({t.status.value})"),
                on_error=w._refused(task.id),
            )

        dialog.accepted.connect(send)
        w._open(dialog)

    def undo(self) -> None:
        """Undo this desk's last decision, wherever the selection went since; else the selected task's."""
        w = self.window
        target = self.review.last_decided or (w.current_task.id if w.current_task is not None else None)
        if target is None:
            return

        def done(task: Any) -> None:
            w.show_info(f"Undone: {task.title} is back in {task.status.value}")
            w.queue.select_task(task.id)

        w.ops.run(
            self.review.undo(target),
            what="Undoing the last decision",
            on_done=done,
            on_error=w._refused(target),
        )


__all__ = ["HistoryView", "NoteDialog", "ReviewMoves", "attempt_to_show", "failure_notice"]
