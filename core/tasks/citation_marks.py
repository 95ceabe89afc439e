"""Analysts' marks on the validator's citations: was each cited quote right for what it backs?

The citation check (``CitationCheck``) only proves a quote is in the evidence; whether it supports
the claim the validator tied it to takes a reader. On a task awaiting a decision or decided, the
analyst marks each citation of the verdict on screen right or wrong (the desk: one key per row;
the CLI: ``evidence-desk citation``). Each mark is a ``citation_marked`` event and nothing is
edited: the latest mark on a citation stands (a later mark replaces an earlier one, as a later
decision does), and calibration counts the standing marks as citation precision per validator
model and version (``core.store.citation_sql``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.domain.event_codec import decode_as, encode, readable_debug, validation_verdict
from core.domain.event_payloads import CitationMark
from core.domain.facts import EventKind
from core.domain.records import EventRecord, ValidationRecord
from core.domain.status import TaskStatus
from core.errors import InvalidRequest, RefusedAction

if TYPE_CHECKING:
    from core.store import Store

MARKS = ("right", "wrong")
# Where a verdict's citations can be judged: awaiting a decision or decided (a run in flight or a
# task never validated has no verdict settled to mark).
MARKABLE = frozenset(
    {TaskStatus.NEEDS_REVIEW, TaskStatus.AWAITING_FEEDBACK, TaskStatus.CLOSED, TaskStatus.ABANDONED}
)


def standing_marks(events: Iterable[EventRecord], validation_id: str) -> dict[int, str]:
    """The mark that stands on each citation of one verdict (the latest), by citation place."""
    marks: dict[int, str] = {}
    for e in sorted(events, key=lambda e: (e.created_at, e.id)):
        if e.kind != EventKind.CITATION_MARKED:
            continue
        m = decode_as(e, CitationMark)
        if m is not None and m.validation_id == validation_id:
            marks[m.citation] = m.mark
    return marks


def _verdict_of(validations: list[ValidationRecord], attempt_id: str) -> ValidationRecord | None:
    mine = [v for v in validations if v.attempt_id == attempt_id]
    return max(mine, key=lambda v: v.created_at) if mine else None


async def mark_citation(
    store: Store,
    task_id: str,
    citation: int,
    mark: str,
    *,
    reviewer: str,
    attempt_index: int | None = None,
) -> EventRecord:
    """Append a mark on citation ``citation`` (from 0) of the attempt's verdict (default: the last
    attempt's) and return its event (a view adds it to the events it shows). Refused, with nothing
    written, when the task or the citation cannot be marked."""
    if mark not in MARKS:
        raise InvalidRequest(f"unknown mark {mark!r}; use right or wrong")
    task = await store.get_task(task_id)
    if task.status not in MARKABLE:
        raise RefusedAction(
            f"task {task.id[:12]} is {task.status.value.replace('_', ' ')}: citations are marked on a "
            "task awaiting a decision or decided"
        )
    attempts = await store.list_attempts(task.id, resolve=False)
    if attempt_index is None:
        attempt = max(attempts, key=lambda a: a.index) if attempts else None
    else:
        attempt = next((a for a in attempts if a.index == attempt_index), None)
    if attempt is None or task.main_session_id is None:
        raise InvalidRequest(f"task {task.id[:12]} has no attempt {attempt_index or ''}".rstrip())
    verdict = _verdict_of(await store.list_validations(task.id), attempt.id)
    if verdict is None:
        raise RefusedAction(f"attempt {attempt.index} of task {task.id[:12]} has no verdict to mark")
    cited = validation_verdict(verdict).citations
    if not 0 <= citation < len(cited):
        raise InvalidRequest(
            f"the verdict on attempt {attempt.index} has {len(cited)} citation(s); "
            f"there is no citation {citation + 1}"
        )
    debug = readable_debug(verdict)
    payload = CitationMark(
        attempt_index=attempt.index, attempt_id=attempt.id, validation_id=verdict.id, citation=citation,
        evidence_id=cited[citation].evidence_id, mark=mark, reviewer=reviewer,
        validator_model=debug.validator_model if debug is not None else None,
        validator_version=debug.validator_version if debug is not None else None,
    )  # fmt: skip
    return await store.append_event(task.main_session_id, *encode(payload), task_id=task.id)


__all__ = ["MARKABLE", "MARKS", "mark_citation", "standing_marks"]
