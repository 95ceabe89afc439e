"""One task's case history: every move, decision, attempt and verdict on one timeline.

Analysts asked "who decided what, when, with which note?" and had to read raw events to answer.
This read builds the answer once, from what is already recorded (status events, decision events,
attempts and validations), so ``history`` on the command line, the desk's History tab and any
report tell the same story. Nothing here writes: the log stays the single source.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from core.domain import TaskStatus
from core.domain.event_codec import decode_as
from core.domain.event_payloads import AnalystDecision, StatusChange
from core.domain.facts import EventKind
from core.tasks.dossier import TaskDossier


class EntryKind(StrEnum):
    CREATED = "created"
    STATUS = "status"  # a move made by a run, a verdict or recovery
    DECISION = "decision"  # an analyst's move: satisfied, revise, abandon, reopen, undo
    ATTEMPT = "attempt"
    VALIDATION = "validation"


class HistoryEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    time: datetime
    kind: EntryKind
    actor: str
    summary: str
    note: str | None = None
    prompt: str | None = None
    from_status: str | None = None
    to_status: str | None = None
    attempt_index: int | None = None


_ORDER = {EntryKind.CREATED: 0, EntryKind.ATTEMPT: 1, EntryKind.VALIDATION: 2, EntryKind.STATUS: 3}


def case_history(dossier: TaskDossier) -> list[HistoryEntry]:
    """The timeline, oldest first; entries at the same instant keep the order things happened in."""
    task = dossier.task
    entries = [
        HistoryEntry(time=task.created_at, kind=EntryKind.CREATED, actor="analyst", summary="task created")
    ]
    for a in dossier.attempts:
        ended = f"{a.state.value}, finish {a.finish_reason or '-'}"
        answer = "an answer" if (a.final_output or "").strip() else "no usable answer"
        entries.append(
            HistoryEntry(
                time=a.started_at,
                kind=EntryKind.ATTEMPT,
                actor="agent",
                summary=f"attempt {a.index} ({a.trigger}): {ended}; {answer}",
                prompt=a.prompt if a.trigger != "initial" else None,
                attempt_index=a.index,
            )
        )
    for v in dossier.validations:
        entries.append(
            HistoryEntry(
                time=v.created_at,
                kind=EntryKind.VALIDATION,
                actor="validator",
                summary=f"attempt {v.attempt_index} judged {v.status} (score {v.score:.2f})",
                attempt_index=v.attempt_index,
            )
        )
    for e in dossier.events:
        if e.kind == EventKind.ANALYST_FEEDBACK_RECORDED:
            d = decode_as(e, AnalystDecision)
            what = f"undo of {d.undoes.get('action')}" if d.undoes else d.action
            entries.append(
                HistoryEntry(
                    time=e.created_at,
                    kind=EntryKind.DECISION,
                    actor=d.reviewer or "analyst",
                    summary=f"{what}: {_status(d.from_status)} → {_status(d.to_status)}",
                    note=d.note or None,
                    prompt=d.prompt or None,
                    from_status=_status_or_none(d.from_status),
                    to_status=_status_or_none(d.to_status),
                )
            )
        elif e.kind == EventKind.TASK_STATUS_CHANGED:
            m = decode_as(e, StatusChange)
            entries.append(
                HistoryEntry(
                    time=e.created_at,
                    kind=EntryKind.STATUS,
                    actor="system",
                    summary=f"{_status(m.from_status)} → {_status(m.to_status)}"
                    + (f": {m.reason}" if m.reason else ""),
                    prompt=m.next_prompt or None,
                    from_status=_status_or_none(m.from_status),
                    to_status=_status_or_none(m.to_status),
                    attempt_index=m.attempt_index,
                )
            )
    # A stable sort by time: same-instant entries keep kind order, so an attempt precedes its verdict.
    return sorted(entries, key=lambda h: (h.time, _ORDER.get(h.kind, 4)))


def _status(status: TaskStatus | None) -> str:
    return "None" if status is None else status.value  # as the entries always read for a missing one


def _status_or_none(status: TaskStatus | None) -> str | None:
    return None if status is None else status.value


def decisions(history: list[HistoryEntry]) -> list[HistoryEntry]:
    return [h for h in history if h.kind is EntryKind.DECISION]


__all__ = ["EntryKind", "HistoryEntry", "case_history", "decisions"]
