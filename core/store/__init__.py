"""Persistence: the workspace database, its migrations and the append-only event log."""

from core.domain.records import (
    AttemptRecord,
    EventRecord,
    FeedbackRecord,
    RunRecord,
    SessionRecord,
    TaskRecord,
    ValidationRecord,
)
from core.store.recovery_sql import InterruptedRun, TaskRecovery
from core.store.store import (
    ImportResult,
    NewEvent,
    Store,
    TaskImport,
    new_event,
    new_id,
    normalise_url,
    sqlite_path,
)

__all__ = [
    "AttemptRecord",
    "EventRecord",
    "FeedbackRecord",
    "ImportResult",
    "InterruptedRun",
    "NewEvent",
    "RunRecord",
    "SessionRecord",
    "Store",
    "TaskImport",
    "TaskRecord",
    "TaskRecovery",
    "ValidationRecord",
    "new_event",
    "new_id",
    "normalise_url",
    "sqlite_path",
]
