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
        p = e.payload
        if e.kind == EventKind.ANALYST_FEEDBACK_RECORDED:
            action = str(p.get("action"))
            undone = p.get("undoes") if isinstance(p.get("undoes"), dict) else None
            what = f"undo of {undone.get('action')}" if undone else action
            entries.append(
                HistoryEntry(
                    time=e.created_at,
                    kind=EntryKind.DECISION,
                    actor=str(p.get("reviewer") or "analyst"),
                    summary=f"{what}: {p.get('from')} → {p.get('to')}",
                    note=p.get("note") or None,
                    prompt=p.get("prompt") or None,
                    from_status=p.get("from"),
                    to_status=p.get("to"),
                )
            )
        elif e.kind == EventKind.TASK_STATUS_CHANGED:
            reason = str(p.get("reason") or "")
            entries.append(
                HistoryEntry(
                    time=e.created_at,
                    kind=EntryKind.STATUS,
                    actor="system",
                    summary=f"{p.get('from')} → {p.get('to')}" + (f": {reason}" if reason else ""),
                    prompt=p.get("next_prompt") or None,
                    from_status=p.get("from"),
                    to_status=p.get("to"),
                    attempt_index=p.get("attempt_index"),
                )
            )
    # A stable sort by time: same-instant entries keep kind order, so an attempt precedes its verdict.
    return sorted(entries, key=lambda h: (h.time, _ORDER.get(h.kind, 4)))


def decisions(history: list[HistoryEntry]) -> list[HistoryEntry]:
    return [h for h in history if h.kind is EntryKind.DECISION]


__all__ = ["EntryKind", "HistoryEntry", "case_history", "decisions"]
