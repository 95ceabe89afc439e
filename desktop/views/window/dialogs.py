"""New task, demo, settings, shortcuts, case bundles, about: what the window opens beside the queue.

Dialogs open window-modal with ``open()`` (never ``exec()``: no nested event loop inside qasync)
and are imported when first opened, so the window's first paint does not pay for them.
"""

from __future__ import annotations

import html
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox

from core.domain.records import TaskRecord

if TYPE_CHECKING:
    from core.workspace import Workspace
    from desktop.dialogs.new_task import NewTaskDialog, NewTaskRequest
    from desktop.views.window.main_window import MainWindow


class WindowDialogs:
    """Opens the window's dialogs and side windows; ``window.active_dialog`` is the one open."""

    def __init__(self, window: MainWindow, demo_builder: Callable[[Workspace], Any] | None) -> None:
        self.window = window
        self.demo_builder = demo_builder

    def open(self, dialog: QDialog) -> None:
        """Dialogs open window-modal with ``open()``: no nested event loop inside qasync."""
        self.window.active_dialog = dialog
        dialog.finished.connect(lambda _r: self._closed(dialog))
        dialog.open()

    def _closed(self, dialog: QDialog) -> None:
        if self.window.active_dialog is dialog:
            self.window.active_dialog = None

    def new_task(self) -> None:
        from desktop.dialogs.new_task import NewTaskDialog

        dialog = NewTaskDialog(self.window)
        dialog.accepted.connect(lambda: self._create(dialog, dialog.request()))
        self.open(dialog)

    def _create(self, dialog: NewTaskDialog, request: NewTaskRequest) -> None:
        w = self.window

        async def create() -> TaskRecord:
            return await w.services.tasks.create(request.text, team=request.team, title=request.title)

        def created(task: TaskRecord) -> None:
            w.select_when_listed = task.id
            if w.model.task(task.id) is not None:
                w.queue.select_task(task.id)
                w.select_when_listed = None
            w.reviewing.watch_run(task.id)

        def failed(exc: BaseException) -> bool:
            if not isinstance(exc, Exception) or isinstance(exc, AssertionError):
                return False
            dialog.show_error(str(exc))
            self.open(dialog)  # reopen with everything the analyst typed
            return True

        w.ops.run(create(), what="Creating the task", on_done=created, on_error=failed)

    def load_demo(self) -> None:
        w = self.window
        builder = self.demo_builder
        if builder is None:
            try:
                from core.demo import build_demo_workspace
            except ImportError:
                w.show_error("The demo workspace is not part of this build; use New task (Ctrl+N) instead.")
                return
            builder = build_demo_workspace

        async def build() -> None:
            result = builder(w.services.workspace)
            if inspect.isawaitable(result):
                await result

        def built(_result: None) -> None:
            w.model.refresh()

        w.ops.run(build(), what="Loading the demo workspace", on_done=built)

    def open_settings(self) -> None:
        from desktop.dialogs.settings import SettingsDialog

        self.open(SettingsDialog(self.window.services.workspace.settings, self.window))

    def show_shortcuts(self) -> None:
        from desktop.dialogs.shortcuts import ShortcutSheet

        self.open(ShortcutSheet(self.window.actions(), self.window))

    def open_case_bundle(self, path: str | None = None) -> None:
        """File → Open case bundle: a read-only window, with a banner when verification fails."""
        w = self.window
        if path is None:
            # open(), not the static getOpenFileName: no nested event loop inside qasync.
            chooser = QFileDialog(w, "Open case bundle", "", "Case bundles (*.zip);;All files (*)")
            chooser.setFileMode(QFileDialog.FileMode.ExistingFile)
            chooser.fileSelected.connect(self.open_case_bundle)
            self.open(chooser)
            return
        from core.bundle import BundleError
        from desktop.views.window.bundle_window import BundleWindow, read_bundle

        def show(opened: Any) -> None:
            window = BundleWindow(opened)
            w.bundle_windows.append(window)
            window.show()

        def failed(exc: BaseException) -> bool:
            if isinstance(exc, BundleError):
                w.show_error(f"Cannot open case bundle: {exc}")
                return True
            return False

        w.ops.run(
            read_bundle(Path(path), db_url=w.workspace.settings.db_url),
            what="open case bundle",
            on_done=show,
            on_error=failed,
        )

    def show_about(self) -> None:
        from core.version import app_version

        box = QMessageBox(self.window)
        box.setWindowTitle("About Evidence Desk")
        box.setText(
            f"<b>Evidence Desk {app_version()}</b><br>Review LLM answers against their evidence."
            f"<br><br>Workspace: {html.escape(self.window.workspace.display_name)}"
        )
        self.open(box)
