"""Start-up work that waits for the queue's first rows: deferred, never dropped.

The desk's start is measured from launch to a filled queue, and most of it is import time. What
the first page does not need (the search, team and bulk features, the keyring read, litellm's
warm-up) is handed to ``FirstFill`` and runs once the live queue has shown its first rows, or
once its first load failed (reported elsewhere): either way it still runs. The pieces run one per
turn of the event loop, so an early key press waits for at most one piece, never for all of them.

When the queue is on screen, the first piece waits for the queue's paint after the fill: the view
lays out and paints a reset model from a zero-length timer of its own, which a piece scheduled
the same way would otherwise beat (installing the search feature took its ~100 ms right between
the rows arriving and the rows showing). A queue not on screen (a test, a hidden start) has no
paint to wait for; a shown one that is never painted (a minimised window) waits at most
``PAINT_WAIT_MS``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

from desktop.models.queue_model import TaskQueueModel

PAINT_WAIT_MS = 1000
"""The longest a shown queue's filled paint is waited for (a minimised window never paints)."""


class FirstFill(QObject):
    """Holds work until ``model`` has loaded once, then runs it in order, a piece per loop turn."""

    def __init__(
        self, model: TaskQueueModel, parent: QObject | None = None, *, view: QWidget | None = None
    ) -> None:
        """``view``: the widget that paints ``model``'s rows (the queue's viewport)."""
        super().__init__(parent)
        self._model = model
        self._view = view
        self._waiting: deque[Callable[[], None]] = deque()
        self._filled = False
        self._running = False
        self._painted = view is None
        self._paint_wait: QTimer | None = None
        self.ran = 0
        """How many pieces have run (tests: deferred work did happen)."""
        model.sig_refreshed.connect(self._on_refreshed)

    @property
    def filled(self) -> bool:
        return self._filled

    @property
    def pending(self) -> int:
        return len(self._waiting)

    @property
    def painted(self) -> bool:
        """Whether the filled queue has been painted (or there was no paint to wait for)."""
        return self._painted

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
        if self._view is not None and self._view.isVisible():
            self._view.installEventFilter(self)
            self._paint_wait = QTimer(self, singleShot=True, interval=PAINT_WAIT_MS)
            self._paint_wait.timeout.connect(self._on_painted)
            self._paint_wait.start()
        else:
            self._painted = True
        self._schedule()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Qt's ``QObject.eventFilter``: notes the view's first paint after the fill, never eats it."""
        if watched is self._view and event.type() == QEvent.Type.Paint and not self._painted:
            QTimer.singleShot(0, self, self._on_painted)  # after this paint has finished
        return False

    def _on_painted(self) -> None:
        if self._painted:
            return
        self._painted = True
        if self._view is not None:
            self._view.removeEventFilter(self)
        if self._paint_wait is not None:
            self._paint_wait.stop()
        self._schedule()

    def _schedule(self) -> None:
        if not self._painted:
            return
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
