"""The desk's main window: queue on the left, the selected task on the right, actions on top.

Everything the window needs is injected (``DeskServices``); it reaches for no globals. Slots
call one core service method each through ``CoreOps`` and render what comes back or what the
bridge announces. Which review actions are enabled comes from ``core.tasks.review.allowed_actions``
for the task version on screen; the desk never re-derives it from the status.
"""

from __future__ import annotations

import html
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStyle,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from core.domain import FeedbackAction
from core.domain.records import TaskRecord
from core.errors import RefusedAction
from core.events import RunProgress, TaskChanged, TasksChanged
from core.tasks.dossier import TaskDossier
from core.tasks.queue import TaskQueue
from core.tasks.review import ReviewService, allowed_actions
from core.tasks.service import TaskService
from core.workspace import Workspace
from desktop.bridge import CoreBridge
from desktop.dialogs.confirm import ConfirmDialog
from desktop.dialogs.new_task import NewTaskDialog, NewTaskRequest
from desktop.dialogs.revise import ReviseDialog
from desktop.dialogs.settings import SettingsDialog
from desktop.dialogs.shortcuts import ShortcutSheet
from desktop.models.queue_model import TaskQueueModel
from desktop.ops import CoreOps
from desktop.views.bulk import install_bulk
from desktop.views.calibration import add_calibration_action
from desktop.views.claims import ClaimKeeper
from desktop.views.detail import TaskDetailView
from desktop.views.history import ReviewMoves
from desktop.views.live import connect_live
from desktop.views.navigation import add_navigation_actions, advance_to
from desktop.views.override import add_override_action
from desktop.views.queue import QueueView
from desktop.views.status import WorkspaceStatus
from desktop.views.watching import LiveWorkspace
from desktop.views.widgets import EmptyState, MessageBar, RunProgressStrip

log = logging.getLogger(__name__)

ICONS_DIR = Path(__file__).resolve().parents[2] / "resources" / "icons"


@dataclass
class DeskServices:
    """What the window works with; built by ``desktop.app`` (or a test) and handed in."""

    workspace: Workspace
    tasks: TaskService
    review: ReviewService
    bridge: CoreBridge
    ops: CoreOps
    queue: TaskQueue

    @classmethod
    def for_workspace(cls, workspace: Workspace, ops: CoreOps | None = None) -> DeskServices:
        tasks = TaskService(workspace)
        return cls(
            workspace=workspace,
            tasks=tasks,
            review=ReviewService(tasks),
            bridge=CoreBridge(workspace.bus),
            ops=ops or CoreOps(),
            queue=TaskQueue(workspace.store),
        )


def icon(name: str, fallback: QStyle.StandardPixmap) -> QIcon:
    path = ICONS_DIR / f"{name}.svg"
    loaded = QIcon(str(path)) if path.is_file() else QIcon()
    if loaded.isNull():
        from PySide6.QtWidgets import QApplication

        style = QApplication.style()
        return style.standardIcon(fallback) if style is not None else QIcon()
    return loaded


class MainWindow(QMainWindow):
    sig_dossier_shown = Signal(str)
    """The right pane now shows this task id's dossier (tests and the screenshot wait on it)."""

    def __init__(
        self,
        services: DeskServices,
        *,
        ui_state: QSettings | None = None,
        demo_builder: Callable[[Workspace], Any] | None = None,
    ) -> None:
        super().__init__()
        self.services = services
        self.ops = services.ops
        self.workspace = services.workspace
        self.ui_state = ui_state or QSettings("evidence-desk", "desk")
        self._demo_builder = demo_builder
        self.live = LiveWorkspace(services.workspace, services.ops, self)
        self._current: TaskRecord | None = None
        self._dossier: TaskDossier | None = None
        self._select_when_listed: str | None = None
        self.active_dialog: QDialog | None = None

        self.setWindowTitle(f"Evidence Desk — {self.workspace.display_name}")
        self.model = TaskQueueModel(services.queue, self.ops, parent=self)
        self.model.set_group_icons(
            {
                "needs_review": icon("needs_review", QStyle.StandardPixmap.SP_MessageBoxWarning),
                "active": icon("running", QStyle.StandardPixmap.SP_MediaPlay),
            }
        )
        self.queue = QueueView(self.model)
        self.detail = TaskDetailView()
        self.message_bar = MessageBar()
        self.progress_strip = RunProgressStrip()
        self.empty_state = EmptyState()
        self.empty_state.hide()

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 6, 6, 6)
        rl.addWidget(self.message_bar)
        rl.addWidget(self.progress_strip)
        rl.addWidget(self.empty_state, 1)
        rl.addWidget(self.detail, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.queue)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.setCentralWidget(self.splitter)
        self.busy_label = QLabel()
        self.statusBar().addPermanentWidget(self.busy_label)
        self.workspace_status = WorkspaceStatus(self.statusBar(), self.workspace)

        self._build_actions()
        self.nav_actions = add_navigation_actions(self, self.detail)  # [ ] N P Alt+1..3
        self._connect()
        self.claims = ClaimKeeper(self)  # the task on screen is claimed, renewed and released
        self.bulk = install_bulk(self)  # multi-select bulk actions, desk exports with progress and cancel
        self._restore_state()
        self._update_actions()

    # ------------------------------------------------------------------ construction
    def _build_actions(self) -> None:
        style = self.style()
        sp = QStyle.StandardPixmap

        def action(
            text: str, keys: list[str], slot: Callable[[], None], tip: str, std: Any = None
        ) -> QAction:
            act = QAction(text, self)
            if std is not None:
                act.setIcon(style.standardIcon(std))
            act.setShortcuts([QKeySequence(k) for k in keys])
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.setToolTip(f"{tip} ({' / '.join(keys)})" if keys else tip)
            act.triggered.connect(lambda _checked=False: slot())
            self.addAction(act)
            return act

        self.act_new = action("New task", ["Ctrl+N"], self.new_task, "Create and run a task", sp.SP_FileIcon)
        self.act_satisfied = action(
            "Satisfied", ["S"], self.satisfied, "Close the task: the answer is good", sp.SP_DialogApplyButton
        )
        self.act_revise = action(
            "Revise…", ["R"], self.revise, "Ask for another attempt", sp.SP_BrowserReload
        )
        self.act_abandon = action(
            "Abandon…", ["A"], self.abandon, "Give up on the task", sp.SP_DialogDiscardButton
        )
        self.act_next = action("Next task", ["J"], lambda: self.queue.select_next(1), "Next task")
        self.act_prev = action("Previous task", ["K"], lambda: self.queue.select_next(-1), "Previous task")
        self.act_filter = action("Filter", ["/", "Ctrl+F"], self.queue.focus_filter, "Filter the queue")
        self.act_settings = action(
            "Settings…", ["Ctrl+,"], self.open_settings, "Settings", sp.SP_FileDialogDetailedView
        )
        self.act_help = action(
            "Shortcuts", ["?"], self.show_shortcuts, "Keyboard shortcuts", sp.SP_DialogHelpButton
        )
        self.act_leave_filter = action("Leave filter", ["Esc"], self._leave_filter, "Back to the queue")
        self.act_open_bundle = action(
            "Open case bundle…", ["Ctrl+O"], self.open_case_bundle, "Open an exported case bundle read-only"
        )
        self.act_about = action("About Evidence Desk", [], self.show_about, "Version and workspace")
        self.act_quit = action("Quit", ["Ctrl+Q"], self._quit, "Quit")

        menus = self.menuBar()
        file_menu = menus.addMenu("&File")
        file_menu.addAction(self.act_new)
        file_menu.addAction(self.act_open_bundle)
        file_menu.addSeparator()
        file_menu.addAction(self.act_settings)
        file_menu.addSeparator()
        file_menu.addAction(self.act_quit)
        review_menu = menus.addMenu("&Review")
        for review_act in (
            self.act_satisfied,
            self.act_revise,
            self.act_abandon,
            self.act_next,
            self.act_prev,
            self.act_filter,
        ):
            review_menu.addAction(review_act)
        self.review_moves = ReviewMoves(self, review_menu)  # undo, reopen, decisions with notes
        add_calibration_action(self, review_menu)
        add_override_action(self, review_menu)
        help_menu = menus.addMenu("&Help")
        help_menu.addAction(self.act_help)
        help_menu.addAction(self.act_about)
        self.bundle_windows: list[QWidget] = []

        bar = QToolBar("Actions")
        bar.setObjectName("ActionBar")
        bar.setMovable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for act in (self.act_new, None, self.act_satisfied, self.act_revise, self.act_abandon, None):
            if act is None:
                bar.addSeparator()
            else:
                bar.addAction(act)
        spacer = QWidget()
        spacer.setSizePolicy(
            spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy()
        )
        bar.addWidget(spacer)
        bar.addAction(self.act_settings)
        bar.addAction(self.act_help)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)

    def _connect(self) -> None:
        bridge = self.services.bridge
        bridge.sig_task_changed.connect(self._on_task_changed)
        bridge.sig_tasks_changed.connect(self._on_tasks_changed)
        bridge.sig_run_progress.connect(self._on_run_progress)
        self.ops.sig_failed.connect(self._on_op_failed)
        self.ops.sig_busy_changed.connect(self._on_busy_changed)
        self.queue.sig_task_selected.connect(self._on_selected)
        self.model.sig_refreshed.connect(self._after_refresh)
        self.model.sig_task_updated.connect(self._after_task_updated)
        self.progress_strip.sig_cancel_requested.connect(self.abandon)
        self.empty_state.sig_new_task.connect(self.new_task)
        self.empty_state.sig_load_demo.connect(self.load_demo)
        self._detail_reload = QTimer(self, singleShot=True, interval=150)
        self._detail_reload.timeout.connect(self._reload_detail)
        self.transcripts = connect_live(self, bridge, self.detail)  # streamed text, evidence as recorded

    def reload_detail_soon(self) -> None:
        self._detail_reload.start()

    def start(self) -> None:
        """Go live: first queue load, then the bridge replays what happened before we listened."""
        self.model.refresh()
        self.services.bridge.start_delivery()
        self.live.start()  # other processes' writes arrive as bus notices from now on
        self.queue.tree.setFocus(Qt.FocusReason.OtherFocusReason)  # S/R/A/J/K work from the first key

    # ------------------------------------------------------------------ state persistence
    def _restore_state(self) -> None:
        geometry = self.ui_state.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1400, 860)
        splitter = self.ui_state.value("window/splitter")
        if isinstance(splitter, QByteArray) and not splitter.isEmpty():
            self.splitter.restoreState(splitter)
        else:
            self.splitter.setSizes([640, 760])  # room for readable titles at the default size
        header = self.ui_state.value("queue/header")
        if isinstance(header, QByteArray) and not header.isEmpty():
            self.queue.tree.header().restoreState(header)

    def save_state(self) -> None:
        self.ui_state.setValue("window/geometry", self.saveGeometry())
        self.ui_state.setValue("window/splitter", self.splitter.saveState())
        self.ui_state.setValue("queue/header", self.queue.tree.header().saveState())
        self.ui_state.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.save_state()
        self.services.bridge.close()
        self.live.stop()
        self.claims.stop()
        super().closeEvent(event)

    # ------------------------------------------------------------------ messages
    def _on_op_failed(self, what: str, message: str) -> None:
        self.show_error(f"{what}: {message}")

    def _on_busy_changed(self, pending: int) -> None:
        self.busy_label.setText("Working…" if pending else "")

    def show_error(self, message: str) -> None:
        """Errors concern the task on screen and go when the analyst moves to another."""
        self.message_bar.show_message(message, error=True, task_id=self.queue.selected_task_id)

    def show_info(self, message: str) -> None:
        self.message_bar.show_message(message)

    # ------------------------------------------------------------------ selection and detail
    @property
    def current_task(self) -> TaskRecord | None:
        return self._current

    def _on_selected(self, task_id: str | None) -> None:
        self.message_bar.set_current_task(task_id)
        if task_id is None:
            self._current = None
            self._dossier = None
            self.detail.set_dossier(None)
            self.progress_strip.clear()
            self._update_actions()
            return
        listed = self.model.task(task_id)
        if listed is not None:
            self._current = listed
            self._update_actions()
        self._load_detail(task_id)

    def _load_detail(self, task_id: str) -> None:
        self.ops.run(
            self.services.queue.dossier(task_id),
            what="Loading the task",
            on_done=lambda dossier: self._show_dossier(task_id, dossier),
        )

    def _reload_detail(self) -> None:
        if self.queue.selected_task_id is not None:
            self._load_detail(self.queue.selected_task_id)

    def _show_dossier(self, task_id: str, dossier: TaskDossier) -> None:
        if task_id != self.queue.selected_task_id:
            return  # the analyst moved on while it loaded
        shown = self._dossier
        if shown is not None and shown.task.id == task_id and dossier.task.version < shown.task.version:
            return
        self._dossier = dossier
        self._current = dossier.task
        self.detail.set_dossier(dossier)
        self._render_progress()
        self._update_actions()
        self.sig_dossier_shown.emit(task_id)

    def _render_progress(self) -> None:
        task = self._current
        if task is not None and task.status.is_execution_active:
            self.progress_strip.show_progress(task.status.value, self.model.progress(task.id))
            self.progress_strip.cancel_button.setEnabled(FeedbackAction.ABANDON in allowed_actions(task))
        else:
            self.progress_strip.clear()

    def _update_actions(self) -> None:
        allowed = allowed_actions(self._current) if self._current is not None else set()
        self.act_satisfied.setEnabled(FeedbackAction.SATISFIED in allowed)
        self.act_revise.setEnabled(FeedbackAction.REVISE in allowed)
        self.act_abandon.setEnabled(FeedbackAction.ABANDON in allowed)
        self.review_moves.update(self._current)

    # ------------------------------------------------------------------ core events
    def _on_task_changed(self, change: TaskChanged) -> None:
        self.model.update_task(change.task_id)
        if change.task_id == self.queue.selected_task_id:
            self._detail_reload.start()

    def _on_tasks_changed(self, change: TasksChanged) -> None:
        self.model.refresh()
        if self.queue.selected_task_id in change.task_ids:
            self._detail_reload.start()

    def _on_run_progress(self, progress: RunProgress) -> None:
        self.model.set_progress(progress)
        if progress.task_id == self.queue.selected_task_id and self._current is not None:
            self._render_progress()

    def _after_refresh(self) -> None:
        empty = (
            self.model.total_count == 0 and self.model.filter.text == "" and self.model.filter.status is None
        )
        leaving = self.empty_state.isVisible() and not empty
        self.empty_state.setVisible(empty and self.model.filter.outcome == "any")
        self.detail.setVisible(not self.empty_state.isVisible())
        if leaving:
            self._focus_queue_after_empty_state()

    def _focus_queue_after_empty_state(self) -> None:
        """The empty state's buttons are gone: keys go to the queue (J selects), not wherever Qt chose."""
        if not self.queue.filter_edit.hasFocus():
            self.queue.tree.setFocus(Qt.FocusReason.OtherFocusReason)

    def _after_task_updated(self, task_id: str) -> None:
        if self.empty_state.isVisible() and self.model.total_count > 0:
            self.empty_state.hide()
            self.detail.show()
            self._focus_queue_after_empty_state()
        if task_id == self._select_when_listed and self.queue.select_task(task_id):
            self._select_when_listed = None
        elif task_id == self.queue.selected_task_id:
            listed = self.model.task(task_id)
            if listed is not None and (self._current is None or listed.version >= self._current.version):
                self._current = listed
                self._render_progress()
                self._update_actions()

    # ------------------------------------------------------------------ review actions
    def _refused(self, task_id: str) -> Callable[[BaseException], bool]:
        def handle(exc: BaseException) -> bool:
            if not isinstance(exc, RefusedAction):
                return False
            self.show_error(f"{exc}. The task has been reloaded.")
            self.model.update_task(task_id)
            if task_id == self.queue.selected_task_id:
                self._load_detail(task_id)
            return True

        return handle

    def satisfied(self) -> None:
        task = self._current
        if task is None or not self.act_satisfied.isEnabled() or not self.claims.may_act(task):
            return
        upcoming = self.queue.next_needing_decision(task.id)
        self.ops.run(
            self.services.review.feedback(task.id, FeedbackAction.SATISFIED, expected_version=task.version),
            what="Closing the task",
            on_done=lambda _t: self._decided(task, f"Closed: {task.title}", upcoming),
            on_error=self._refused(task.id),
        )

    def recommended_prompt(self) -> str:
        dossier = self._dossier
        if dossier is None or not dossier.validations:
            return ""
        latest = dossier.validations[-1]
        value = latest.result.get("recommended_revision_prompt") if isinstance(latest.result, dict) else None
        return value if isinstance(value, str) else ""

    def revise(self) -> None:
        task = self._current
        if task is None or not self.act_revise.isEnabled() or not self.claims.may_act(task):
            return
        dialog = ReviseDialog(task.title, self.recommended_prompt(), self)
        dialog.accepted.connect(lambda: self._send_revision(task, dialog.prompt, dialog.note))
        self._open(dialog)

    def _send_revision(self, task: TaskRecord, prompt: str, note: str | None) -> None:
        async def revise_and_run() -> TaskRecord:
            updated = await self.services.review.feedback(
                task.id, FeedbackAction.REVISE, expected_version=task.version, prompt=prompt, note=note
            )
            self._watch_run(task.id)
            return updated

        upcoming = self.queue.next_needing_decision(task.id)
        self.ops.run(
            revise_and_run(),
            what="Sending the revision",
            on_done=lambda _t: self._decided(task, f"Revision sent: {task.title}", upcoming),
            on_error=self._refused(task.id),
        )

    def abandon(self) -> None:
        task = self._current
        if task is None or not self.act_abandon.isEnabled() or not self.claims.may_act(task):
            return
        running = task.status.is_execution_active
        dialog = ConfirmDialog(
            "Abandon task",
            "Abandon this task?"
            + (" Its run is cancelled first." if running else "")
            + " The task and its evidence stay in the workspace.",
            "Abandon",
            self,
            subject=task.title,
        )
        dialog.accepted.connect(lambda: self._send_abandon(task))
        self._open(dialog)

    def _send_abandon(self, task: TaskRecord) -> None:
        upcoming = self.queue.next_needing_decision(task.id)
        current = self._current if self._current is not None and self._current.id == task.id else task
        self.ops.run(
            self.services.review.feedback(task.id, FeedbackAction.ABANDON, expected_version=current.version),
            what="Abandoning the task",
            on_done=lambda _t: self._decided(task, f"Abandoned: {task.title}", upcoming),
            on_error=self._refused(task.id),
        )

    def _decided(self, task: TaskRecord, message: str, upcoming: str | None) -> None:
        """After a decision: say so, and (Settings: auto_advance) select the next task needing one."""
        self.show_info(message)
        if self.workspace.settings.auto_advance and self.queue.selected_task_id == task.id:
            advance_to(self.queue, task.id, upcoming)

    def _watch_run(self, task_id: str) -> None:
        """Start the run in this process; its errors are reported like any other operation's."""
        handle = self.services.tasks.start(task_id)

        async def follow() -> TaskRecord:
            return await handle

        self.ops.run(follow(), what="Running the task", on_error=self._refused(task_id))

    # ------------------------------------------------------------------ new task, demo, settings
    def new_task(self) -> None:
        dialog = NewTaskDialog(self)
        dialog.accepted.connect(lambda: self._create(dialog, dialog.request()))
        self._open(dialog)

    def _create(self, dialog: NewTaskDialog, request: NewTaskRequest) -> None:
        async def create() -> TaskRecord:
            return await self.services.tasks.create(request.text, team=request.team, title=request.title)

        def created(task: TaskRecord) -> None:
            self._select_when_listed = task.id
            if self.model.task(task.id) is not None:
                self.queue.select_task(task.id)
                self._select_when_listed = None
            self._watch_run(task.id)

        def failed(exc: BaseException) -> bool:
            if not isinstance(exc, Exception) or isinstance(exc, AssertionError):
                return False
            dialog.show_error(str(exc))
            self._open(dialog)  # reopen with everything the analyst typed
            return True

        self.ops.run(create(), what="Creating the task", on_done=created, on_error=failed)

    def load_demo(self) -> None:
        builder = self._demo_builder
        if builder is None:
            try:
                from core.demo import build_demo_workspace
            except ImportError:
                self.show_error(
                    "The demo workspace is not part of this build; use New task (Ctrl+N) instead."
                )
                return
            builder = build_demo_workspace

        async def build() -> None:
            result = builder(self.services.workspace)
            if inspect.isawaitable(result):
                await result

        self.ops.run(build(), what="Loading the demo workspace", on_done=lambda _r: self._refresh_queue())

    def _refresh_queue(self) -> None:
        self.model.refresh()

    def open_settings(self) -> None:
        self._open(SettingsDialog(self.services.workspace.settings, self))

    def show_shortcuts(self) -> None:
        self._open(ShortcutSheet(self.actions(), self))

    def open_case_bundle(self, path: str | None = None) -> None:
        """File → Open case bundle: a read-only window, with a banner when verification fails."""
        if path is None:
            # open(), not the static getOpenFileName: no nested event loop inside qasync.
            chooser = QFileDialog(self, "Open case bundle", "", "Case bundles (*.zip);;All files (*)")
            chooser.setFileMode(QFileDialog.FileMode.ExistingFile)
            chooser.fileSelected.connect(self.open_case_bundle)
            self._open(chooser)
            return
        from core.bundle import BundleError
        from desktop.views.bundle_window import BundleWindow, read_bundle

        def show(opened: Any) -> None:
            window = BundleWindow(opened)
            self.bundle_windows.append(window)
            window.show()

        def failed(exc: BaseException) -> bool:
            if isinstance(exc, BundleError):
                self.show_error(f"Cannot open case bundle: {exc}")
                return True
            return False

        self.ops.run(
            read_bundle(Path(path), db_url=self.workspace.settings.db_url),
            what="open case bundle",
            on_done=show,
            on_error=failed,
        )

    def _quit(self) -> None:
        self.close()

    def show_about(self) -> None:
        from core.version import app_version

        box = QMessageBox(self)
        box.setWindowTitle("About Evidence Desk")
        box.setText(
            f"<b>Evidence Desk {app_version()}</b><br>Review LLM answers against their evidence."
            f"<br><br>Workspace: {html.escape(self.workspace.display_name)}"
        )
        self._open(box)

    def _leave_filter(self) -> None:
        if self.queue.filter_edit.hasFocus():
            self.queue.tree.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def _open(self, dialog: QDialog) -> None:
        """Dialogs open window-modal with ``open()``: no nested event loop inside qasync."""
        self.active_dialog = dialog
        dialog.finished.connect(lambda _r: self._dialog_closed(dialog))
        dialog.open()

    def _dialog_closed(self, dialog: QDialog) -> None:
        if self.active_dialog is dialog:
            self.active_dialog = None
