"""Keeping the desk live: other processes' writes to the workspace reach the queue by themselves.

The core watcher (``Workspace.watch_changes``) publishes ordinary ``TaskChanged`` notices on the
workspace's bus, so they arrive through the same bridge and the same one-row queue updates as
the desk's own changes; selection and scroll are kept the way they are for those. This object
only ties the watcher's lifetime to the window's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

from desktop.ops import CoreOps

if TYPE_CHECKING:  # the workspace module loads the LLM gateway: not needed to paint
    from core.workspace import Workspace


class LiveWorkspace(QObject):
    """Starts the workspace watcher when the window goes live and stops it when the window closes."""

    def __init__(self, workspace: Workspace, ops: CoreOps, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._workspace = workspace
        self._ops = ops
        self._watcher: Any = None  # core's ChangeWatcher; the desk only starts and stops it
        self._stopped = False

    @property
    def watching(self) -> bool:
        return self._watcher is not None

    def start(self) -> None:
        if self._stopped or self._watcher is not None:
            return
        self._ops.run(
            self._workspace.watch_changes(), what="Watching the workspace for changes", on_done=self._started
        )

    def _started(self, watcher: Any) -> None:
        if self._stopped:
            watcher.stop()
            return
        self._watcher = watcher

    def stop(self) -> None:
        """Synchronous, for closeEvent; what winds down afterwards is awaited by ``close``."""
        self._stopped = True
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()

    async def close(self) -> None:
        self._stopped = True
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            await watcher.close()
