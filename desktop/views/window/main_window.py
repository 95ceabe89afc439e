"""The desk's main window: queue on the left, the selected task on the right, actions on top.

Everything the window needs is injected (``DeskServices``); it reaches for no globals. Slots
call one core service method each through ``CoreOps`` and render what comes back or what the
bridge announces. Which review actions are enabled comes from ``core.tasks.review.allowed_actions``
for the task version on screen; the desk never re-derives it from the status.

The window holds layout and wiring only: actions and menus are built in ``actions``, decisions
live in ``review``, dialogs in ``dialogs``. Every feature is handed the window as a ``DeskHost``
(``desktop.views.host``), the one interface it may use; the window implements it with public
members and holds what each feature returns (``team``, ``bulk``, ``calibration``...): no feature
adds an attribute here. Nothing the first paint does not show is imported here (the agent, the
LLM gateway, dialogs, the search, team and bulk features): a test keeps it so, since start-up
time is mostly import time. The desk's launcher goes further and installs those features, reads
the keyring and warms litellm only once the queue has its first rows (``after_first_fill``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import QDialog, QLabel, QMainWindow, QMenu, QSplitter, QStyle, QVBoxLayout, QWidget

from core.domain import FeedbackAction
from core.domain.records import TaskRecord
from core.events import RunProgress, TaskChanged, TasksChanged
from core.tasks.review import allowed_actions
from desktop.desk_log import add_open_log_action
from desktop.models.queue_model import TaskQueueModel
from desktop.services import DeskServices
from desktop.views.insight.calibration import CalibrationMenuEntry
from desktop.views.insight.compare import CompareMenuEntry
from desktop.views.insight.templates import TemplatesMenuEntry
from desktop.views.queue.claims import ClaimKeeper
from desktop.views.queue.view import QueueView
from desktop.views.queue.watching import LiveWorkspace
from desktop.views.task.blind import BlindReview
from desktop.views.task.citation_marks import CitationMarks
from desktop.views.task.detail import TaskDetailView
from desktop.views.task.evidence_paging import install_evidence_paging
from desktop.views.task.live_feed import connect_live
from desktop.views.task.navigation import add_navigation_actions
from desktop.views.task.override_action import add_override_action
from desktop.views.task.second_review import SecondReview
from desktop.views.window.actions import ActionSlots, build_actions, icon
from desktop.views.window.chrome import EmptyState, MessageBar, RunProgressStrip
from desktop.views.window.dialogs import WindowDialogs
from desktop.views.window.layout import restore_layout, restore_splits, save_layout, save_splits
from desktop.views.window.offline import OfflineGuard
from desktop.views.window.review import Decisions, ReviewActions, ReviewMoves
from desktop.views.window.start import FirstFill
from desktop.views.window.status import WorkspaceStatus
from desktop.views.window.workspaces import WorkspaceMenu, window_title

if TYPE_CHECKING:
    from core.tasks.dossier import TaskDossier
    from core.workspace import Workspace
    from desktop.ops import CoreOps
    from desktop.views.queue.boot import BootQueue
    from desktop.views.queue.bulk import BulkDesk
    from desktop.views.queue.search import SearchPanel
    from desktop.views.team.install import TeamDesk

__all__ = ["MainWindow"]

log = logging.getLogger(__name__)


class MainWindow(QMainWindow):
    """The desk's window, and the ``DeskHost`` every feature is handed."""

    sig_dossier_shown = Signal(str)
    """The right pane now shows this task id's dossier (tests and the screenshot wait on it)."""

    # Installed by ``_features``: at construction, or after the first fill if deferred.
    search_panel: SearchPanel
    team: TeamDesk
    bulk: BulkDesk

    def __init__(
        self,
        services: DeskServices,
        *,
        ui_state: QSettings | None = None,
        demo_builder: Callable[[Workspace], Any] | None = None,
        defer_features: bool = False,
        boot_queue: BootQueue | None = None,
    ) -> None:
        """``defer_features``: search, team and bulk install after the queue's first fill (the
        launcher's choice: none of them is on screen at start, and their imports cost more than
        the queue's query). ``boot_queue``: the boot window's seeded queue, taken over with its
        rows, selection and scroll (its operations must be ``services.ops``)."""
        super().__init__()
        self.services = services
        self.ops: CoreOps = services.ops
        self.workspace = services.workspace
        self.ui_state = ui_state or QSettings("evidence-desk", "desk")
        self.live = LiveWorkspace(services.workspace, services.ops, self)
        self._current: TaskRecord | None = None
        self._dossier: TaskDossier | None = None
        self.select_when_listed: str | None = None
        """A task just created here: select it as soon as the queue lists it."""
        self.dialogs = WindowDialogs(self, demo_builder, on_created=self._created)

        self.setWindowTitle(window_title(self.workspace.display_name, self.workspace.settings.db_url))
        self._build_panes(boot_queue)
        self._lay_out()
        decisions = self._build_actions()
        self._connect()
        self.claims = ClaimKeeper(self)  # the task on screen is claimed, renewed and released
        self.reviewing = ReviewActions(self, self.claims, decisions)  # S / R / A
        self.reviewing.blind = BlindReview(self)  # blind review: the verdict hidden until a first judgement
        self.reviewing.second = SecondReview(self, self.calibration.cases)  # 2, Ctrl+2: second reviews
        self.evidence_reader = install_evidence_paging(
            self
        )  # big evidence paged, found in core (not deferred: a selection needs it)
        for install in self._features():
            if defer_features:
                self.after_first_fill(install)
            else:
                install()
        restore_layout(self, self.ui_state, self.splitter, self.queue.tree, header=boot_queue is None)
        self.detail.keep_positions(restore_splits(self.detail.splitters, self.ui_state))
        self._update_actions()

    def _build_panes(self, boot_queue: BootQueue | None) -> None:
        """The queue (the boot window's, rows and all, when there is one) and the right pane's parts."""
        if boot_queue is not None:
            self.model = boot_queue.model
            self.model.setParent(self)
            self.model.attach(self.services.queue)
        else:
            self.model = TaskQueueModel(self.services.queue, self.ops, parent=self)
        self.model.set_group_icons(
            {
                "needs_review": icon("needs_review", QStyle.StandardPixmap.SP_MessageBoxWarning),
                "active": icon("running", QStyle.StandardPixmap.SP_MediaPlay),
            }
        )
        self.queue = boot_queue.view if boot_queue is not None else QueueView(self.model)
        self.first_fill = FirstFill(self.model, self, view=self.queue.tree.viewport())
        """Start-up work waiting for the queue's first rows on screen (``after_first_fill``)."""
        self.detail = TaskDetailView()
        self.message_bar = MessageBar()
        self.progress_strip = RunProgressStrip()
        self.empty_state = EmptyState()
        self.empty_state.hide()

    def _lay_out(self) -> None:
        """Queue | task, split 2:3; messages and run progress sit above the task, where the analyst looks."""
        right = QWidget()
        self._right_pane = QVBoxLayout(right)
        self._right_pane.setContentsMargins(0, 6, 6, 6)
        self._right_pane.addWidget(self.message_bar)
        self._right_pane.addWidget(self.progress_strip)
        self._right_pane.addWidget(self.empty_state, 1)
        self._right_pane.addWidget(self.detail, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.queue)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.setCentralWidget(self.splitter)
        self.busy_label = QLabel()
        self.statusBar().addPermanentWidget(self.busy_label)
        self.workspace_status = WorkspaceStatus(self.statusBar(), self.workspace)

    def _build_actions(self) -> Decisions:
        """Keys, menus and the tool bar, built before any feature so each finds the menus it extends.

        Returns the S / R / A actions by decision, for the review actions that enable and run them.
        """
        self.acts = build_actions(
            self,
            self.queue,
            ActionSlots(
                new_task=self.new_task,
                satisfied=self.satisfied,
                revise=self.revise,
                abandon=self.abandon,
                open_settings=self.open_settings,
                show_shortcuts=self.show_shortcuts,
                leave_filter=self.leave_filter,
                open_case_bundle=self.open_case_bundle,
                show_about=self.show_about,
                quit=self.quit,
            ),
        )  # keys, the File/Review/Help menus, the tool bar
        decisions = {
            FeedbackAction.SATISFIED: self.acts.satisfied,
            FeedbackAction.REVISE: self.acts.revise,
            FeedbackAction.ABANDON: self.acts.abandon,
        }
        self.review_moves = ReviewMoves(self, self.acts.review_menu, decisions)  # undo, reopen, notes
        self.calibration = CalibrationMenuEntry(self)  # Review → Calibration…
        self.compare_validators = CompareMenuEntry(self)  # Review → Compare validators…
        self.validator_templates = TemplatesMenuEntry(self)  # Review → Validator templates…
        self.act_override = add_override_action(self)  # Review → Record my verdict…
        self.citation_marks = CitationMarks(self)  # + / − mark the current citation right or wrong
        self.nav_actions = add_navigation_actions(self, self.detail)  # [ ] N P Alt+1..3
        self.act_open_log = add_open_log_action(self.acts.help_menu)  # Help → Open log folder
        self.workspaces = WorkspaceMenu(  # File → Open workspace…, the demo's, recent ones
            self, self.menu("&File"), self.acts.settings, self.ui_state, self.workspace.settings.db_url
        )
        return decisions

    def _features(self) -> list[Callable[[], None]]:
        """Each desk feature adds itself here with one step (run last in construction, or after
        the first fill when deferred, so a feature sees every pane, action and menu the window has).
        Each is imported only when installed: none is on screen at start, and together their
        imports cost more than the queue's first query.
        """
        return [self._install_search, self._install_team, self._install_bulk]

    def _install_search(self) -> None:
        """Ctrl+Shift+F: search everywhere, saved views."""
        from desktop.views.queue.search import install_search

        self.search_panel = install_search(self)

    def _install_team(self) -> None:
        """Batches, schedules, assigned panes; presence."""
        from desktop.views.team.install import install_team

        self.team = install_team(self)

    def _install_bulk(self) -> None:
        """Multi-select bulk actions, desk exports."""
        from desktop.views.queue.bulk import install_bulk

        self.bulk = install_bulk(self)

    # ------------------------------------------------------------------ construction
    def _connect(self) -> None:
        bridge = self.services.bridge
        bridge.sig_task_changed.connect(self._on_task_changed)
        bridge.sig_tasks_changed.connect(self._on_tasks_changed)
        bridge.sig_run_progress.connect(self._on_run_progress)
        acts = self.acts
        needing_db: list[QAction] = [acts.new, acts.satisfied, acts.revise, acts.abandon]
        self.offline = OfflineGuard(self.statusBar(), needing_db, self._back_online)
        bridge.sig_workspace_connection.connect(self.offline.on_connection)
        self.ops.sig_failed.connect(self._on_op_failed)
        self.ops.sig_busy_changed.connect(self._on_busy_changed)
        self.queue.sig_task_selected.connect(self._on_selected)
        self.model.sig_refreshed.connect(self._after_refresh)
        self.model.sig_task_updated.connect(self._after_task_updated)
        self.progress_strip.sig_cancel_requested.connect(self.abandon)
        self.empty_state.sig_new_task.connect(self.new_task)
        self.empty_state.sig_load_demo.connect(self.load_demo)
        self._detail_reload = QTimer(self, singleShot=True, interval=150)
        self._detail_loads = 0  # dossier loads started so far
        self._shown_load = 0  # the number of the load whose dossier is on screen
        self._detail_reload.timeout.connect(self._reload_detail)
        self.transcripts = connect_live(self)  # streamed text, evidence as recorded

    def start(self) -> None:
        """Go live: first queue load, then the bridge replays what happened before we listened."""
        self.first_fill.watch(self.model.refresh())
        self.services.bridge.start_delivery()
        self.live.start()  # other processes' writes arrive as bus notices from now on
        self.queue.tree.setFocus(Qt.FocusReason.OtherFocusReason)  # S/R/A/J/K work from the first key
        if self.queue.selected_task_id is not None:  # chosen in the boot window's queue
            self._on_selected(self.queue.selected_task_id)

    def after_first_fill(self, work: Callable[[], None]) -> None:
        """Run ``work`` once the queue has shown its first rows: deferred start-up, never dropped."""
        self.first_fill.add(work)

    # ------------------------------------------------------------------ DeskHost: where features go
    @property
    def widget(self) -> QMainWindow:
        return self

    @property
    def reviewer(self) -> str:
        return self.claims.reviewer

    def menu(self, title: str) -> QMenu:
        wanted = title.replace("&", "")
        for entry in self.menuBar().actions():
            menu = entry.menu()
            if isinstance(menu, QMenu) and entry.text().replace("&", "") == wanted:
                return menu
        return self.menuBar().addMenu(title)

    def add_above_detail(self, widget: QWidget) -> None:
        self._right_pane.insertWidget(max(self._right_pane.indexOf(self.detail), 0), widget)

    # ------------------------------------------------------------------ state persistence
    def save_state(self) -> None:
        save_splits(self.detail.splitters, self.ui_state)
        save_layout(self, self.ui_state, self.splitter, self.queue.tree)

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
        self.load_detail(task_id)

    def load_detail(self, task_id: str) -> None:
        self._detail_loads += 1
        load = self._detail_loads
        self.ops.run(
            self.services.queue.dossier(task_id),
            what="Loading the task",
            on_done=lambda dossier: self._show_dossier(task_id, dossier, load),
        )

    def reload_detail_soon(self) -> None:
        self._detail_reload.start()

    def _reload_detail(self) -> None:
        if self.queue.selected_task_id is not None:
            self.load_detail(self.queue.selected_task_id)

    def _show_dossier(self, task_id: str, dossier: TaskDossier, load: int) -> None:
        if task_id != self.queue.selected_task_id:
            return  # the analyst moved on while it loaded
        shown = self._dossier
        # Loads overlap (a change notice's reload, the one after a review action) and may finish in
        # any order: a dossier read before the one on screen is older, even at the same task version
        # (a blind judgement or a note does not move the task), and would undo what is shown.
        if (
            shown is not None
            and shown.task.id == task_id
            and (dossier.task.version < shown.task.version or load < self._shown_load)
        ):
            return
        self._shown_load = load
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
        if self.reviewing.second is not None and self.reviewing.second.pending():
            allowed = set(FeedbackAction)  # S / R / A give the second review
        self.acts.satisfied.setEnabled(FeedbackAction.SATISFIED in allowed)
        self.acts.revise.setEnabled(FeedbackAction.REVISE in allowed)
        self.acts.abandon.setEnabled(FeedbackAction.ABANDON in allowed)
        self.review_moves.update(self._current)
        self.offline.hold()

    def _back_online(self) -> None:
        """One reload of the queue and the task on screen: notices sent while offline were lost."""
        self._update_actions()
        self.model.refresh()
        self._detail_reload.start()

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
        if task_id == self.select_when_listed and self.queue.select_task(task_id):
            self.select_when_listed = None
        elif task_id == self.queue.selected_task_id:
            listed = self.model.task(task_id)
            if listed is not None and (self._current is None or listed.version >= self._current.version):
                self._current = listed
                self._render_progress()
                self._update_actions()

    # ------------------------------------------------------------------ actions (review, dialogs)
    @property
    def dossier(self) -> TaskDossier | None:
        """The dossier on screen (None while the first one loads)."""
        return self._dossier

    def satisfied(self) -> None:
        self.reviewing.satisfied()

    def revise(self) -> None:
        self.reviewing.revise()

    def abandon(self) -> None:
        self.reviewing.abandon()

    def refused(self, task_id: str) -> Callable[[BaseException], bool]:
        return self.reviewing.refused(task_id)

    def new_task(self) -> None:
        self.dialogs.new_task()

    def load_demo(self) -> None:
        """The demo opens as its own workspace (``demo.sqlite3``) and is built there; never here,
        unless this is the demo's workspace (or a window built alone was handed a demo builder)."""
        from core.workspace import is_demo_workspace

        if not is_demo_workspace(self.workspace.settings.db_url):
            if self.workspaces.can_switch:
                self.workspaces.open_demo()
                return
            if self.dialogs.demo_builder is None:
                self.show_error("The demo opens as its own workspace: File → Open demo workspace.")
                return
        self.dialogs.load_demo()

    def open_settings(self) -> None:
        self.dialogs.open_settings()

    def show_shortcuts(self) -> None:
        self.dialogs.show_shortcuts()

    def open_case_bundle(self, path: str | None = None) -> None:
        self.dialogs.open_case_bundle(path)

    def show_about(self) -> None:
        self.dialogs.show_about()

    def open_dialog(self, dialog: QDialog) -> None:
        self.dialogs.open(dialog)

    @property
    def active_dialog(self) -> QDialog | None:
        """The dialog opened last and still open (tests and the first-run banner answer it)."""
        return self.dialogs.active

    @property
    def bundle_windows(self) -> list[QWidget]:
        """The read-only case bundle windows opened from here."""
        return self.dialogs.bundle_windows

    def _created(self, task: TaskRecord) -> None:
        """A task made with New task: select it (now, or once the queue lists it) and run it."""
        self.select_when_listed = task.id
        if self.model.task(task.id) is not None:
            self.queue.select_task(task.id)
            self.select_when_listed = None
        self.reviewing.watch_run(task.id)

    def quit(self) -> None:
        self.close()

    def leave_filter(self) -> None:
        if self.queue.filter_edit.hasFocus():
            self.queue.tree.setFocus(Qt.FocusReason.ShortcutFocusReason)
