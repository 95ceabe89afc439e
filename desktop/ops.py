"""One wrapper for running core coroutines from slots (Anki's ``CollectionOp`` idea).

A slot hands ``CoreOps.run`` a coroutine and, optionally, what to do with its result. The
coroutine runs on the qasync loop and must not touch widgets; the callbacks run afterwards on
the GUI thread. The wrapper keeps a reference to every task (no fire-and-forget), reports
failures through ``sig_failed`` so one place shows them, and can cancel everything at close.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Signal

from core.errors import EvidenceDeskError

log = logging.getLogger(__name__)

T = TypeVar("T")


class CoreOps(QObject):
    sig_failed = Signal(str, str)
    """An operation failed: (what was being done, a message a person can act on)."""

    sig_busy_changed = Signal(int)
    """The number of operations in flight changed (drives the busy indicator)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pending: set[asyncio.Task[Any]] = set()

    @property
    def pending(self) -> int:
        return len(self._pending)

    def run(
        self,
        coro: Coroutine[Any, Any, T],
        *,
        what: str,
        on_done: Callable[[T], None] | None = None,
        on_error: Callable[[BaseException], bool] | None = None,
    ) -> asyncio.Task[T]:
        """Schedule ``coro``; ``on_error`` returns True when it handled the error itself."""
        task: asyncio.Task[T] = asyncio.get_event_loop().create_task(coro)
        self._pending.add(task)
        self.sig_busy_changed.emit(len(self._pending))

        def finished(t: asyncio.Task[T]) -> None:
            self._pending.discard(t)
            try:
                self.sig_busy_changed.emit(len(self._pending))
            except RuntimeError:  # the QObject is gone (window closed); nothing left to tell
                return
            if t.cancelled():
                return
            exc = t.exception()
            try:
                if exc is not None:
                    if on_error is not None and on_error(exc):
                        return
                    self._report(what, exc)
                elif on_done is not None:
                    on_done(t.result())
            except RuntimeError as cb_exc:  # a widget deleted while the operation ran
                if "already deleted" not in str(cb_exc):
                    self._report(what, cb_exc)
            except Exception as cb_exc:
                self._report(what, cb_exc)

        task.add_done_callback(finished)
        return task

    def _report(self, what: str, exc: BaseException) -> None:
        if isinstance(exc, EvidenceDeskError):
            message = str(exc)
        else:
            log.error("%s failed", what, exc_info=exc)
            message = f"{type(exc).__name__}: {exc}"
        self.sig_failed.emit(what, message)

    async def wait_idle(self) -> None:
        """Wait until nothing is in flight (tests and orderly shutdown)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def cancel_all(self) -> None:
        for task in list(self._pending):
            task.cancel()
