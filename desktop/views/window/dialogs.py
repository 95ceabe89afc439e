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

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox, QWidget

from core.domain.records import TaskRecord

if TYPE_CHECKING:
    from core.workspace import Workspace
    from desktop.dialogs.new_task import NewTaskDialog, NewTaskRequest
    from desktop.views.host import DeskHost


class WindowDialogs:
    """Opens the window's dialogs and side windows; ``active`` is the one open."""

    def __init__(
        self,
        host: DeskHost,
        demo_builder: Callable[[Workspace], Any] | None,
        *,
        on_created: Callable[[TaskRecord], None],
    ) -> None:
        """``on_created``: what the window does with a task New task made (select it, run it)."""
        self.host = host
        self.demo_builder = demo_builder
        self.on_created = on_created
        self.active: QDialog | None = None
        self.bundle_windows: list[QWidget] = []

    def open(self, dialog: QDialog) -> None:
        """Dialogs open window-modal with ``open()``: no nested event loop inside qasync."""
        self.active = dialog
        dialog.finished.connect(lambda _r: self._closed(dialog))
        dialog.open()

    def _closed(self, dialog: QDialog) -> None:
        if self.active is dialog:
            self.active = None

    def new_task(self) -> None:
        from desktop.dialogs.new_task import NewTaskDialog

        dialog = NewTaskDialog(self.host.widget)
        dialog.accepted.connect(lambda: self._create(dialog, dialog.request()))
        self.open(dialog)

    def _create(self, dialog: NewTaskDialog, request: NewTaskRequest) -> None:
        host = self.host

        async def create() -> TaskRecord:
            return await host.services.tasks.create(request.text, team=request.team, title=request.title)

        def failed(exc: BaseException) -> bool:
            if not isinstance(exc, Exception) or isinstance(exc, AssertionError):
                return False
            dialog.show_error(str(exc))
            self.open(dialog)  # reopen with everything the analyst typed
            return True

        host.ops.run(create(), what="Creating the task", on_done=self.on_created, on_error=failed)

    def load_demo(self) -> None:
        host = self.host
        builder = self.demo_builder
        if builder is None:
            try:
                from core.demo import build_demo_workspace
            except ImportError:
                host.show_error(
                    "The demo workspace is not part of this build; use New task (Ctrl+N) instead."
                )
                return
            builder = build_demo_workspace

        async def build() -> None:
            result = builder(host.services.workspace)
            if inspect.isawaitable(result):
                await result

        def built(_result: None) -> None:
            host.model.refresh()

        host.ops.run(build(), what="Loading the demo workspace", on_done=built)

    def open_settings(self) -> None:
        from desktop.dialogs.settings import SettingsDialog
        from desktop.views.window.apply_settings import apply_saved_settings

        dialog = SettingsDialog(self.host.services.workspace.settings, self.host.widget, applies_now=True)
        dialog.sig_saved.connect(lambda changed: apply_saved_settings(self.host, changed))  # no restart
        self.open(dialog)

    def show_shortcuts(self) -> None:
        from desktop.dialogs.shortcuts import ShortcutSheet

        window = self.host.widget
        self.open(ShortcutSheet(window.actions(), window))

    def _forget_bundle_window(self, window: QWidget) -> None:
        self.bundle_windows[:] = [w for w in self.bundle_windows if w is not window]

    def open_case_bundle(self, path: str | None = None) -> None:
        """File → Open case bundle: a read-only window, with a banner when verification fails."""
        host = self.host
        if path is None:
            # open(), not the static getOpenFileName: no nested event loop inside qasync.
            chooser = QFileDialog(host.widget, "Open case bundle", "", "Case bundles (*.zip);;All files (*)")
            chooser.setFileMode(QFileDialog.FileMode.ExistingFile)
            chooser.fileSelected.connect(self.open_case_bundle)
            self.open(chooser)
            return
        from core.bundle import BundleError
        from desktop.views.window.bundle_window import BundleWindow, read_bundle

        def show(opened: Any) -> None:
            window = BundleWindow(opened)
            # Closed means gone: a hidden window kept the bundle's records and its open zip
            # streams for as long as the desk ran, one more per bundle opened.
            window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            window.destroyed.connect(lambda *_: self._forget_bundle_window(window))
            self.bundle_windows.append(window)
            window.show()

        def failed(exc: BaseException) -> bool:
            if isinstance(exc, BundleError):
                host.show_error(f"Cannot open case bundle: {exc}")
                return True
            return False

        host.ops.run(
            read_bundle(Path(path), db_url=host.services.workspace.settings.db_url),
            what="open case bundle",
            on_done=show,
            on_error=failed,
        )

    def show_about(self) -> None:
        from core.version import app_version

        box = QMessageBox(self.host.widget)
        box.setWindowTitle("About Evidence Desk")
        box.setText(
            f"<b>Evidence Desk {app_version()}</b><br>Review LLM answers against their evidence."
            f"<br><br>Workspace: {html.escape(self.host.services.workspace.display_name)}"
        )
        self.open(box)
