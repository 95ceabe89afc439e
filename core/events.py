"""The core's event bus: typed notices of what changed, plain observers, no Qt.

Services announce *what* changed, in the manner of Anki's ``OpChanges``: a task's row (with its
new status and version), a batch of tasks at once (crash recovery), or a running attempt's
progress. The desk's bridge turns each notice into one precise model update (one row, not a
full reload); the command line ignores them. Publishing is synchronous and cheap: observers must
not block, and an observer that raises is logged and dropped from that delivery only, so a
broken view can never break a run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from core.domain.status import TaskStatus

log = logging.getLogger(__name__)


class TaskChange(StrEnum):
    """Why a task's row changed; a view redraws only what the change can affect."""

    CREATED = "created"
    STATUS = "status"  # status (and with it, usually, outcome, score and attempt count)
    FIELDS = "fields"  # stored fields other than the status (runner, notes, claims)


class _Notice(BaseModel):
    model_config = ConfigDict(frozen=True)


class TaskChanged(_Notice):
    """One task's stored row changed; ``version`` lets a reader drop an older read arriving late."""

    kind: Literal["task_changed"] = "task_changed"
    task_id: str
    change: TaskChange
    status: TaskStatus
    version: int


class TasksChanged(_Notice):
    """Many tasks changed in one operation (crash recovery, bulk actions): refresh once, not per task."""

    kind: Literal["tasks_changed"] = "tasks_changed"
    task_ids: tuple[str, ...]


class RunProgress(_Notice):
    """A running attempt moved on (a phase, an iteration, a tool); nothing stored changed."""

    kind: Literal["run_progress"] = "run_progress"
    task_id: str
    attempt: int
    phase: str
    iteration: int = 0
    tool: str | None = None
    node: str | None = None
    started_at: datetime | None = None


class TranscriptDelta(_Notice):
    """A piece of a model's answer arrived while it streams; nothing stored changed yet.

    The stored record gets the whole answer in one response event when the call ends; these only
    let a view show the text as it is written. ``iteration`` starts a new paragraph in the view.
    """

    kind: Literal["transcript_delta"] = "transcript_delta"
    task_id: str | None
    run_id: str
    iteration: int
    text: str
    node: str | None = None


class EvidenceRecorded(_Notice):
    """A run recorded tool results (evidence) for a task; a view showing the task re-reads it."""

    kind: Literal["evidence_recorded"] = "evidence_recorded"
    task_id: str
    run_id: str
    count: int


class ReviewersChanged(_Notice):
    """Who claims or looks at these tasks changed (a claim, release, take-over or presence).

    The task rows themselves did not change: the desk re-reads their claims and viewers only.
    """

    kind: Literal["reviewers_changed"] = "reviewers_changed"
    task_ids: tuple[str, ...]


class WorkspaceConnection(_Notice):
    """The workspace's database went away (``online`` False) or answers again (True).

    Notices of other processes' writes made while it was away were never delivered, so on True a
    view reloads once what it shows (the queue, the task on screen) instead of trusting its rows.
    """

    kind: Literal["workspace_connection"] = "workspace_connection"
    online: bool


BusEvent = (
    TaskChanged
    | TasksChanged
    | RunProgress
    | TranscriptDelta
    | EvidenceRecorded
    | ReviewersChanged
    | WorkspaceConnection
)

Observer = Callable[[BusEvent], None]


class EventBus:
    def __init__(self) -> None:
        self._observers: list[Observer] = []

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Returns the function that unsubscribes, so owners can tie it to their lifetime."""
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    @property
    def has_observers(self) -> bool:
        """Lets a publisher skip building notices nobody would see (streamed text pieces)."""
        return bool(self._observers)

    def publish(self, event: BusEvent) -> None:
        for observer in list(self._observers):
            try:
                observer(event)
            except Exception:
                log.exception("event observer failed on %s", event.kind)


__all__ = [
    "BusEvent",
    "EventBus",
    "EvidenceRecorded",
    "Observer",
    "ReviewersChanged",
    "RunProgress",
    "TaskChange",
    "TaskChanged",
    "TasksChanged",
    "TranscriptDelta",
    "WorkspaceConnection",
]
