"""What a running task shows: the agent's text as it streams, and a note while evidence gathers.

Streamed text never reaches the store piece by piece (one response event per call is recorded at
its end), so the desk keeps it here, per task, from the bus's ``TranscriptDelta`` notices; the
recorded evidence comes from the dossier like any other, reloaded when the bus says some was
recorded. Repaints are coalesced: a fast model sends dozens of pieces a second. The detail pane
imports this module; the wiring to the bus and the window is ``live_feed``'s.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from core.domain.facts import AttemptState
from core.domain.records import AttemptRecord
from core.events import TranscriptDelta

__all__ = ["GATHERING_NOTE", "WORKING_NOTE", "LiveTranscripts", "is_live"]

WORKING_NOTE = "The agent is working; its answer appears here as it is written."
GATHERING_NOTE = "The agent is working; each tool result appears here as it is recorded."
REPAINT_MS = 100
MAX_LIVE_CHARS = 200_000  # a live view, not a record: the stored response event has the whole text


def is_live(attempt: AttemptRecord | None) -> bool:
    """The attempt is still running, so its panes show work in progress, not an absence."""
    return attempt is not None and attempt.state is AttemptState.RUNNING


class LiveTranscripts(QObject):
    """Streamed text per running task, one paragraph per model call."""

    sig_text_changed = Signal(str)
    """A task's live text changed (emitted at most every ``REPAINT_MS``): the task id."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._parts: dict[str, dict[tuple[str, str | None, int], str]] = {}
        self._dirty: set[str] = set()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REPAINT_MS)
        self._timer.timeout.connect(self._flush)

    def add(self, delta: TranscriptDelta) -> None:
        if delta.task_id is None:
            return
        parts = self._parts.setdefault(delta.task_id, {})
        key = (delta.run_id, delta.node, delta.iteration)
        parts[key] = (parts.get(key, "") + delta.text)[-MAX_LIVE_CHARS:]
        self._dirty.add(delta.task_id)
        if not self._timer.isActive():
            self._timer.start()

    def text(self, task_id: str) -> str:
        """The task's streamed text so far, calls separated by blank lines; "" when none."""
        return "\n\n".join(t for t in self._parts.get(task_id, {}).values() if t.strip())

    def forget(self, task_id: str) -> None:
        """The task's run ended: its record now holds the text."""
        self._parts.pop(task_id, None)
        self._dirty.discard(task_id)

    def _flush(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for task_id in sorted(dirty):
            self.sig_text_changed.emit(task_id)
