"""The core's event bus: plain observers, no Qt.

Services announce what changed (a task's status, a run's progress); the desk's bridge turns
these into Qt signals, the CLI ignores them. Publishing is synchronous and cheap: observers must
not block, and an observer that raises is logged and dropped from that delivery only, so a
broken view can never break a run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)


class BusEvent(BaseModel):
    kind: str  # "task_changed" | "run_progress" | "task_created"
    task_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


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

    def publish(self, kind: str, task_id: str | None = None, **data: Any) -> None:
        event = BusEvent(kind=kind, task_id=task_id, data=data)
        for observer in list(self._observers):
            try:
                observer(event)
            except Exception:
                log.exception("event observer failed on %s", kind)
