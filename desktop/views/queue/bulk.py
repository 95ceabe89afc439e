"""Bulk work on the queue's selection: satisfied, abandon, assign, bundle, report, decisions.

The queue selects several tasks (Shift/Ctrl-click, Shift+Up/Down, Ctrl+A within a group); this
module keeps group headers out of that selection, shows "N tasks selected" above the detail pane,
and offers the bulk actions. Every rule stays in core: ``core.tasks.bulk`` decides what each task
allows and makes one ordinary decision per task, ``core.exports`` writes files. The desk asks for
a plan, names its counts (and the skipped tasks) in a confirmation, then runs the work as one
asyncio task with a progress dialog whose Cancel stops it between tasks; files are written to a
temporary name and renamed only at the end, so a cancelled export leaves nothing behind.
With one task selected nothing here changes the desk: S/R/A act on it as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QItemSelection, QItemSelectionModel, QObject, Qt, Signal
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressDialog,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.errors import EvidenceDeskError
from core.exports.progress import ExportCancelled, Step
from core.tasks.bulk import BulkAction, BulkPlan, BulkProgress, BulkResult, Cancellation, plan_bulk, run_bulk
from desktop.models.queue_model import TASK_ID_ROLE
from desktop.widgets.plain import plain_label

if TYPE_CHECKING:
    from desktop.views.host import DeskHost


class BulkConfirmDialog(QDialog):
    """The question before a bulk action: the counts, the skipped tasks, and a note for abandon."""

    def __init__(self, plan: BulkPlan, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{plan.action.verb.capitalize()} {len(plan.ready)} task(s)")
        layout = QVBoxLayout(self)
        self.message_label = plain_label(plan.confirmation(), self)
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.message_label)
        self.note_edit = QLineEdit(placeholderText="Note kept with every decision (optional)")
        self.note_edit.setVisible(plan.action is not BulkAction.ASSIGN)
        layout.addWidget(self.note_edit)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.confirm_button = buttons.addButton(
            f"{plan.action.verb.capitalize()} {len(plan.ready)}", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.confirm_button.setEnabled(bool(plan.ready))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(520, 180)

    @property
    def note(self) -> str | None:
        return self.note_edit.text().strip() or None


class SelectionSummary(QWidget):
    """Shown above the detail pane while several tasks are selected, with the bulk buttons."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("BulkSelectionSummary")
        font = self.label.font()
        font.setBold(True)
        self.label.setFont(font)
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 4, 6, 4)
        row.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        for key, text in (
            ("satisfied", "Satisfied…"),
            ("abandon", "Abandon…"),
            ("assign", "Assign…"),
            ("bundle", "Export bundle…"),
            ("report", "Report…"),
        ):
            button = QPushButton(text)
            self.buttons[key] = button
            row.addWidget(button)
        self.setStyleSheet("SelectionSummary { background: #eef2ff; border-radius: 4px; }")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.hide()

    def show_count(self, n: int) -> None:
        self.label.setText(f"{n} tasks selected")
        self.setVisible(n > 1)


class BulkDesk(QObject):
    sig_finished = Signal(str)
    """A bulk action or export ended: the one-line summary shown to the analyst (tests wait on it)."""

    sig_progress = Signal(int, int)
    """(done, total) after each task of the running bulk action or export."""

    def __init__(self, host: DeskHost) -> None:
        super().__init__(host.widget)
        self.host = host
        self.queue = host.queue
        self.tree = host.queue.tree
        self.progress: QProgressDialog | None = None
        self.cancel: Cancellation | None = None
        self.dialog: QDialog | None = None
        self.choose_path: Callable[[str, str, Callable[[str], None]], None] = self._choose_path
        """How a file name is asked for (a file dialog; tests answer directly)."""
        self.summary = SelectionSummary()
        host.add_above_detail(self.summary)
        self.tree.selectionModel().selectionChanged.connect(self._selection_changed)
        self.tree.installEventFilter(self)
        self._build_actions()

    # ------------------------------------------------------------------ selection
    def selected(self) -> list[str]:
        return self.queue.selected_task_ids()

    def _selection_changed(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        headers = QItemSelection()
        for index in selected.indexes():
            if index.column() == 0 and index.data(TASK_ID_ROLE) is None:
                headers.select(index, index)
        if not headers.isEmpty():  # a group header is never part of the selection
            self.tree.selectionModel().select(
                headers, QItemSelectionModel.SelectionFlag.Deselect | QItemSelectionModel.SelectionFlag.Rows
            )
            return
        n = len(self.selected())
        self.summary.show_count(n)
        for act in self.bulk_actions:
            act.setEnabled(n >= 1)

    def select_group(self) -> None:
        """Ctrl+A: every loaded task of the current task's group (never the whole queue)."""
        current = self.tree.currentIndex()
        if not current.isValid():
            return
        group = current.parent() if current.parent().isValid() else current.siblingAtColumn(0)
        model = self.tree.model()
        rows = model.rowCount(group)
        if rows == 0:
            return
        first, last = model.index(0, 0, group), model.index(rows - 1, 0, group)
        self.tree.selectionModel().select(
            QItemSelection(first, last),
            QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
        )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Ctrl+A selects within a group; with several selected, S and A ask about them all."""
        if watched is self.tree and event.type() in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            assert isinstance(event, QKeyEvent)
            bulk_key = {Qt.Key.Key_S: BulkAction.SATISFIED, Qt.Key.Key_A: BulkAction.ABANDON}.get(
                Qt.Key(event.key())
            )
            plain = event.modifiers() == Qt.KeyboardModifier.NoModifier
            if event.matches(QKeySequence.StandardKey.SelectAll) or (
                bulk_key is not None and plain and len(self.selected()) > 1
            ):
                if event.type() == QEvent.Type.ShortcutOverride:
                    event.accept()  # the key goes to the tree, not to the single-task shortcut
                    return True
                if event.matches(QKeySequence.StandardKey.SelectAll):
                    self.select_group()
                elif bulk_key is not None:
                    self.ask(bulk_key)
                return True
        return super().eventFilter(watched, event)

    # ------------------------------------------------------------------ actions
    def _build_actions(self) -> None:
        def action(text: str, slot: Callable[[], None], tip: str) -> QAction:
            act = QAction(text, self.host.widget)
            act.setToolTip(tip)
            act.triggered.connect(lambda _checked=False: slot())
            act.setEnabled(False)
            return act

        self.act_bulk_satisfied = action(
            "Satisfied (selection)…", lambda: self.ask(BulkAction.SATISFIED), "Close every selected task"
        )
        self.act_bulk_abandon = action(
            "Abandon (selection)…", lambda: self.ask(BulkAction.ABANDON), "Abandon every selected task"
        )
        self.act_assign = action("Assign to…", self.ask_assignee, "Give the selected tasks to a reviewer")
        self.act_export = action("Export bundle…", self.export_bundle, "Case bundle of the selected tasks")
        self.act_report = action("HTML report…", self.report, "One report with a summary table")
        self.act_decisions = action(
            "Export decisions…", self.export_decisions, "CSV or JSONL of the selected tasks' decisions"
        )
        self.bulk_actions = [
            self.act_bulk_satisfied,
            self.act_bulk_abandon,
            self.act_assign,
            self.act_export,
            self.act_report,
            self.act_decisions,
        ]
        file_menu, review_menu = self.host.menu("File"), self.host.menu("Review")
        before = next((a for a in file_menu.actions() if a.isSeparator()), None)
        for act in (self.act_export, self.act_report, self.act_decisions):
            if before is not None:
                file_menu.insertAction(before, act)
            else:
                file_menu.addAction(act)
        review_menu.addSeparator()
        for act in (self.act_bulk_satisfied, self.act_bulk_abandon, self.act_assign):
            review_menu.addAction(act)
        buttons = self.summary.buttons
        buttons["satisfied"].clicked.connect(lambda: self.ask(BulkAction.SATISFIED))
        buttons["abandon"].clicked.connect(lambda: self.ask(BulkAction.ABANDON))
        buttons["assign"].clicked.connect(self.ask_assignee)
        buttons["bundle"].clicked.connect(self.export_bundle)
        buttons["report"].clicked.connect(self.report)

    @property
    def busy(self) -> bool:
        return self.cancel is not None

    def ask(self, action: BulkAction, assignee: str | None = None) -> None:
        """Plan the action on the selection, then ask with the counts (``dialog`` while open)."""
        ids = self.selected()
        if not ids or self.busy:
            return
        review = self.host.services.review
        reviewer = self.host.reviewer

        def confirm(plan: BulkPlan) -> None:
            dialog = BulkConfirmDialog(plan, self.host.widget)
            self.dialog = dialog
            dialog.accepted.connect(lambda: self._run_plan(plan, dialog.note))
            dialog.finished.connect(lambda _r: setattr(self, "dialog", None))
            dialog.open()

        self.host.ops.run(
            plan_bulk(review, ids, action, reviewer=reviewer, assignee=assignee),
            what="Preparing the bulk action",
            on_done=confirm,
        )

    def ask_action(self, name: str) -> None:
        """The bulk action named "satisfied", "abandon" or "assign" (menus, buttons, tests)."""
        if name == BulkAction.ASSIGN:
            self.ask_assignee()
        else:
            self.ask(BulkAction(name))

    def ask_assignee(self) -> None:
        if not self.selected() or self.busy:
            return
        dialog = QDialog(self.host.widget)
        dialog.setWindowTitle("Assign the selected tasks")
        layout = QVBoxLayout(dialog)
        layout.addWidget(plain_label(f"Assign {len(self.selected())} task(s) to reviewer:", dialog))
        name = QLineEdit()
        layout.addWidget(name)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(dialog.accept)
        buttons.rejected.connect(dialog.reject)
        layout.addWidget(buttons)

        def assign() -> None:
            if name.text().strip():
                self.ask(BulkAction.ASSIGN, name.text().strip())

        dialog.accepted.connect(assign)
        self.dialog = dialog
        dialog.open()

    def _run_plan(self, plan: BulkPlan, note: str | None) -> None:
        reviewer = self.host.reviewer

        def step(p: BulkProgress) -> None:
            self._progress(p.done, p.total, p.title)

        def work(cancel: Cancellation) -> Coroutine[Any, Any, BulkResult]:
            return run_bulk(
                self.host.services.review, plan, reviewer=reviewer, note=note, progress=step, cancel=cancel
            )

        def describe(result: BulkResult) -> str:
            self.host.model.refresh()  # many rows moved: one reload, not a read per notice
            return result.summary()

        self._start(f"{plan.action.verb.capitalize()}…", len(plan.ready), work, describe)

    # ------------------------------------------------------------------ exports
    def _choose_path(self, title: str, filters: str, then: Callable[[str], None]) -> None:
        chooser = QFileDialog(self.host.widget, title, "", filters)
        chooser.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        chooser.fileSelected.connect(then)
        self.dialog = chooser
        chooser.open()

    def _ids_for_export(self) -> list[str]:
        ids = self.selected()
        if not ids and self.queue.selected_task_id is not None:
            ids = [self.queue.selected_task_id]
        return ids

    def export_bundle(self) -> None:
        """The selection as one case bundle; the message says whether it is signed (as the CLI does)."""
        ids = self._ids_for_export()
        if not ids or self.busy:
            return

        def chosen(path: str) -> None:
            from core.bundle.paths import scrub_for_settings
            from core.bundle.signing import workspace_signing_key
            from core.exports.bundle import export_selection

            settings = self.host.services.workspace.settings
            store = self.host.services.workspace.store

            async def work_async(cancel: Cancellation) -> Any:
                key = await asyncio.to_thread(workspace_signing_key, settings.db_url)
                return await export_selection(
                    store,
                    ids,
                    Path(path),
                    signing_key=key,
                    scrub=scrub_for_settings(settings),
                    progress=self._step,
                    cancel=cancel,
                )

            self._start(
                "Exporting the bundle…",
                len(ids),
                work_async,
                lambda s: f"Exported {len(s.task_ids)} task(s) to {s.path}, " + signed_words(s.signer),
            )

        self.choose_path("Export bundle", "Case bundles (*.zip);;All files (*)", chosen)

    def report(self) -> None:
        ids = self._ids_for_export()
        if not ids or self.busy:
            return

        def chosen(path: str) -> None:
            from core.bundle.paths import scrub_for_settings
            from core.exports.report_multi import write_multi_report

            settings = self.host.services.workspace.settings

            def work(cancel: Cancellation) -> Coroutine[Any, Any, Path]:
                return write_multi_report(
                    self.host.services.workspace.store,
                    ids,
                    Path(path),
                    scrub=scrub_for_settings(settings),
                    progress=self._step,
                    cancel=cancel,
                )

            self._start("Writing the report…", len(ids), work, lambda p: f"Report of {len(ids)} task(s): {p}")

        self.choose_path("HTML report", "HTML pages (*.html);;All files (*)", chosen)

    def export_decisions(self) -> None:
        ids = self._ids_for_export()
        if self.busy:
            return

        def chosen(path: str) -> None:
            from core.bundle.paths import scrub_for_settings
            from core.exports.decisions import DecisionFilter, write_decisions

            settings = self.host.services.workspace.settings
            fmt = "jsonl" if path.lower().endswith((".jsonl", ".json")) else "csv"

            def work(cancel: Cancellation) -> Coroutine[Any, Any, Any]:
                return write_decisions(
                    self.host.services.workspace.store,
                    Path(path),
                    fmt,
                    DecisionFilter(task_ids=ids or None),
                    scrub=scrub_for_settings(settings),
                    progress=self._step,
                    cancel=cancel,
                )

            self._start(
                "Exporting decisions…",
                len(ids),
                work,
                lambda s: f"Wrote {s.rows} decision(s) on {s.tasks} task(s) to {s.path}",
            )

        self.choose_path("Export decisions", "CSV (*.csv);;JSON lines (*.jsonl);;All files (*)", chosen)

    # ------------------------------------------------------------------ progress and cancel
    def _step(self, step: Step) -> None:
        self._progress(step.done, step.total, step.label)

    def _progress(self, done: int, total: int, label: str) -> None:
        dialog = self.progress
        if dialog is None:
            return
        dialog.setMaximum(max(total, 1))
        dialog.setValue(done)
        dialog.setLabelText(f"{done} of {total}: {label}")
        self.sig_progress.emit(done, total)

    def _start(
        self,
        title: str,
        total: int,
        work: Callable[[Cancellation], Coroutine[Any, Any, Any]],
        describe: Callable[[Any], str],
    ) -> None:
        cancel = Cancellation()
        self.cancel = cancel
        dialog = QProgressDialog(title, "Cancel", 0, max(total, 1), self.host.widget)
        dialog.setWindowTitle(title.rstrip("…"))
        # Not modal: a modal QProgressDialog runs processEvents() inside setValue(), which re-enters
        # the qasync loop from a coroutine's callback and leaves later tasks never scheduled.
        dialog.setWindowModality(Qt.WindowModality.NonModal)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.setMinimumDuration(0)
        dialog.canceled.connect(cancel.cancel)
        self.progress = dialog
        dialog.show()  # show(), not open(): open() would make it window-modal again

        def finish(message: str, error: bool = False) -> None:
            self.cancel = None
            self.progress = None
            dialog.canceled.disconnect(cancel.cancel)
            dialog.close()
            dialog.deleteLater()
            if error:
                self.host.show_error(message)
            else:
                self.host.show_info(message)
            self.sig_finished.emit(message)

        def failed(exc: BaseException) -> bool:
            if isinstance(exc, ExportCancelled):
                finish(str(exc))
                return True
            if isinstance(exc, EvidenceDeskError):
                finish(f"{title.rstrip('…')}: {exc}", error=True)
                return True
            finish(f"{title.rstrip('…')} failed: {type(exc).__name__}: {exc}", error=True)
            return False

        self.host.ops.run(
            work(cancel), what=title.rstrip("…"), on_done=lambda r: finish(describe(r)), on_error=failed
        )


def install_bulk(host: DeskHost) -> BulkDesk:
    """Multi-select bulk work and desk exports; the main window keeps one line for it."""
    return BulkDesk(host)


__all__ = ["BulkConfirmDialog", "BulkDesk", "SelectionSummary", "install_bulk"]


def signed_words(signer: str | None) -> str:
    """How a written bundle is vouched for, in the CLI's words: a reader must know an unsigned one."""
    return f"signed by {signer}" if signer else "unsigned (no OS keyring for the signing key)"
