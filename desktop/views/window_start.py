"""Start-up work that waits for the queue's first rows: deferred, never dropped.

The desk's start is measured from launch to a filled queue, and most of it is import time. What
the first page does not need (the search, team and bulk features, the keyring read, litellm's
warm-up) is handed to ``FirstFill`` and runs once the live queue has shown its first rows, or
once its first load failed (reported elsewhere): either way it still runs. The pieces run one per
turn of the event loop, so the filled queue is painted first and an early key press waits for
at most one piece, never for all of them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer

from desktop.models.queue_model import TaskQueueModel


class FirstFill(QObject):
    """Holds work until ``model`` has loaded once, then runs it in order, a piece per loop turn."""

    def __init__(self, model: TaskQueueModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._model = model
        self._waiting: deque[Callable[[], None]] = deque()
        self._filled = False
        self._running = False
        self.ran = 0
        """How many pieces have run (tests: deferred work did happen)."""
        model.sig_refreshed.connect(self._on_refreshed)

    @property
    def filled(self) -> bool:
        return self._filled

    @property
    def pending(self) -> int:
        return len(self._waiting)

    def add(self, work: Callable[[], None]) -> None:
        """Run ``work`` after the first fill (soon, if the queue has filled already)."""
        self._waiting.append(work)
        if self._filled:
            self._schedule()

    def watch(self, first_load: asyncio.Task[Any]) -> None:
        """The queue's first load: if it fails, what waits runs anyway."""
        first_load.add_done_callback(self._first_load_done)

    def _first_load_done(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._fill()

    def _on_refreshed(self) -> None:
        if self._model.loaded_once:
            self._fill()

    def _fill(self) -> None:
        if self._filled:
            return
        self._filled = True
        self._model.sig_refreshed.disconnect(self._on_refreshed)
        self._schedule()

    def _schedule(self) -> None:
        if not self._running and self._waiting:
            self._running = True
            QTimer.singleShot(0, self, self._run_one)

    def _run_one(self) -> None:
        self._running = False
        if not self._waiting:
            return
        work = self._waiting.popleft()
        try:
            work()
        finally:
            self.ran += 1
            self._schedule()
