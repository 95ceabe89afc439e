"""The one place core events become Qt signals.

Core services publish plain events on ``EventBus`` (no Qt there). The bridge subscribes as soon
as the workspace opens, but the window may connect later; events published before
``start_delivery`` are buffered and replayed in order, so nothing a start-up crash recovery
announced is lost (the pattern of qutebrowser's ``utils/message.py``).

Observers may in principle be called from another thread (a core component running its own
loop in a worker); the event is therefore handed over through a queued internal signal when it
does not arrive on the bridge's thread, so the public signals always fire on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from core.events import (
    BusEvent,
    EventBus,
    EvidenceRecorded,
    ReviewersChanged,
    RunProgress,
    TaskChanged,
    TasksChanged,
    TranscriptDelta,
    WorkspaceConnection,
)


class CoreBridge(QObject):
    sig_task_changed = Signal(object)
    """One task's stored row changed or was created: a ``core.events.TaskChanged``."""

    sig_tasks_changed = Signal(object)
    """Many tasks changed in one operation: a ``core.events.TasksChanged`` (refresh once)."""

    sig_run_progress = Signal(object)
    """A running attempt moved on: a ``core.events.RunProgress``."""

    sig_transcript_delta = Signal(object)
    """A piece of a running agent's answer arrived: a ``core.events.TranscriptDelta``."""

    sig_evidence_recorded = Signal(object)
    """A running attempt recorded tool results: a ``core.events.EvidenceRecorded``."""

    sig_reviewers_changed = Signal(object)
    """Claims or presence on some tasks changed: a ``core.events.ReviewersChanged``."""

    sig_workspace_connection = Signal(object)
    """The workspace's database went away or is back: a ``core.events.WorkspaceConnection``."""

    _sig_incoming = Signal(object)  # cross-thread hand-over only

    def __init__(self, bus: EventBus, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._buffer: list[BusEvent] | None = []
        self._sig_incoming.connect(self._dispatch, Qt.ConnectionType.QueuedConnection)
        self._unsubscribe: Callable[[], None] | None = bus.subscribe(self._on_event)

    def start_delivery(self) -> None:
        """Called once the UI has connected its slots: replays buffered events, then goes live."""
        buffered, self._buffer = self._buffer or [], None
        for event in buffered:
            self._emit(event)

    def close(self) -> None:
        """Stop listening (the window is closing or the workspace is being swapped)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    @property
    def buffered_count(self) -> int:
        return len(self._buffer or [])

    def _on_event(self, event: BusEvent) -> None:
        if QThread.currentThread() is not self.thread():
            self._sig_incoming.emit(event)
            return
        self._dispatch(event)

    @Slot(object)
    def _dispatch(self, event: BusEvent) -> None:
        if self._buffer is not None:
            self._buffer.append(event)
            return
        self._emit(event)

    def _emit(self, event: BusEvent) -> None:
        if isinstance(event, TaskChanged):
            self.sig_task_changed.emit(event)
        elif isinstance(event, TasksChanged):
            self.sig_tasks_changed.emit(event)
        elif isinstance(event, RunProgress):
            self.sig_run_progress.emit(event)
        elif isinstance(event, TranscriptDelta):
            self.sig_transcript_delta.emit(event)
        elif isinstance(event, EvidenceRecorded):
            self.sig_evidence_recorded.emit(event)
        elif isinstance(event, ReviewersChanged):
            self.sig_reviewers_changed.emit(event)
        elif isinstance(event, WorkspaceConnection):
            self.sig_workspace_connection.emit(event)
