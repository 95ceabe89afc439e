"""Writing the search index: one ``search_docs`` row per passage, written with what it indexes.

Titles and task text are kept by triggers (migration 0009_search). Everything else is written here,
called from the store's own write transactions (an attempt's packet and answer, a validation, a
feedback row, a bulk import) or right after an override's event, so a search never misses what
the desk already shows. Large texts are indexed in overlapping 64 KiB segments: a hit names the
segment it is in, a phrase across a boundary is still found (the overlap is longer than any phrase
anyone types), and no PostgreSQL ``tsvector`` approaches its 1 MB limit.

Existing workspaces are backfilled lazily: the migration leaves ``search_meta.backfill = pending``
and the first search (``SearchService``) or ``evidence-desk search --reindex`` runs ``backfill``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import and_, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.domain.evidence import TaskEvidencePacket
from core.domain.facts import EventKind
from core.evidence.render import render_packet
from core.store.base import StoreBase
from core.store.models import (
    AttemptRow,
    EventRow,
    FeedbackRow,
    SearchDocRow,
    SearchMetaRow,
    TaskRow,
    ValidationRow,
    utcnow,
)

SEGMENT_CHARS = 65_536
OVERLAP_CHARS = 512
BACKFILL_KEY = "backfill"
_BATCH = 200


class DocKind(StrEnum):
    TITLE = "title"
    TEXT = "text"
    ANSWER = "answer"
    EVIDENCE = "evidence"
    ISSUE = "issue"
    NOTE = "note"


def segments(text: str) -> list[str]:
    """``text`` in pieces of ``SEGMENT_CHARS``, each running ``OVERLAP_CHARS`` into the next."""
    if len(text) <= SEGMENT_CHARS + OVERLAP_CHARS:
        return [text]
    return [text[i : i + SEGMENT_CHARS + OVERLAP_CHARS] for i in range(0, len(text), SEGMENT_CHARS)]


def _evidence_texts(packet: dict[str, Any]) -> list[tuple[str, str]]:
    """(evidence id, full text) of every item of an attempt's packet, as the desk numbers them.

    The one place that reads evidence content: when evidence moves to a chunk store, this is the
    function to re-point.
    """
    parsed = TaskEvidencePacket.model_validate(packet)
    rendered = render_packet(parsed, include_final_output=False)
    return [(item.evidence_id, item.content) for item in rendered.items if item.content.strip()]


def _docs(
    task_id: str,
    attempt_index: int | None,
    kind: DocKind,
    ref: str,
    text: str | None,
    created_at: datetime | None,
) -> list[dict[str, Any]]:
    if not text or not text.strip():
        return []
    return [
        {
            "task_id": task_id,
            "attempt_index": attempt_index,
            "kind": kind.value,
            "ref": ref,
            "seg": i,
            "body": body,
            "created_at": created_at,
        }
        for i, body in enumerate(segments(text))
    ]


async def _replace(
    conn: AsyncConnection,
    task_id: str,
    attempt_index: int | None,
    kinds: Sequence[DocKind],
    docs: list[dict[str, Any]],
) -> None:
    await conn.execute(
        delete(SearchDocRow).where(
            SearchDocRow.task_id == task_id,
            SearchDocRow.attempt_index == attempt_index,
            SearchDocRow.kind.in_([k.value for k in kinds]),
        )
    )
    if docs:
        await conn.execute(insert(SearchDocRow), docs)


def _attempt_docs(
    task_id: str, index: int, answer: str | None, packet: dict[str, Any] | None, when: datetime
) -> list[dict[str, Any]]:
    docs = _docs(task_id, index, DocKind.ANSWER, "", answer, when)
    if packet:
        for evidence_id, text in _evidence_texts(packet):
            docs.extend(_docs(task_id, index, DocKind.EVIDENCE, evidence_id, text, when))
    return docs


_ATTEMPT_COLUMNS = (
    AttemptRow.task_id,
    AttemptRow.index,
    AttemptRow.final_output,
    AttemptRow.packet,
    AttemptRow.finished_at,
    AttemptRow.started_at,
)


async def index_attempt(conn: AsyncConnection, attempt_id: str) -> None:
    """(Re)index an attempt's answer and evidence items from its stored row."""
    found = (await conn.execute(select(*_ATTEMPT_COLUMNS).where(AttemptRow.id == attempt_id))).first()
    if found is None:
        return
    task_id, index, answer, packet, finished, started = found
    docs = _attempt_docs(task_id, index, answer, packet, finished or started or utcnow())
    await _replace(conn, task_id, index, (DocKind.ANSWER, DocKind.EVIDENCE), docs)


def _issue_docs(
    task_id: str, attempt_index: int, result: dict[str, Any], when: datetime | None
) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for field, label in (("issues", "issue"), ("missing_requirements", "missing"), ("evidence_gaps", "gap")):
        for i, text in enumerate(result.get(field) or []):
            docs.extend(_docs(task_id, attempt_index, DocKind.ISSUE, f"{label} {i + 1}", str(text), when))
    return docs


async def index_validation(
    conn: AsyncConnection, task_id: str, attempt_index: int, result: dict[str, Any], when: datetime | None
) -> None:
    """The validator's issues, missing requirements and evidence gaps of one attempt (the latest wins)."""
    await _replace(
        conn, task_id, attempt_index, (DocKind.ISSUE,), _issue_docs(task_id, attempt_index, result, when)
    )


async def _attempt_index(conn: AsyncConnection, attempt_id: str | None) -> int | None:
    if attempt_id is None:
        return None
    found = await conn.execute(select(AttemptRow.index).where(AttemptRow.id == attempt_id))
    return found.scalar()


def _feedback_docs(
    task_id: str,
    attempt_index: int | None,
    feedback_id: str,
    note: str | None,
    prompt: str | None,
    when: datetime,
) -> list[dict[str, Any]]:
    return _docs(task_id, attempt_index, DocKind.NOTE, f"note {feedback_id}", note, when) + _docs(
        task_id, attempt_index, DocKind.NOTE, f"revision {feedback_id}", prompt, when
    )


async def index_feedback(
    conn: AsyncConnection,
    *,
    task_id: str,
    attempt_id: str | None,
    feedback_id: str,
    note: str | None,
    prompt: str | None,
    when: datetime,
) -> None:
    """An analyst's decision note and revision prompt (each decision adds; none replaces another)."""
    docs = _feedback_docs(task_id, await _attempt_index(conn, attempt_id), feedback_id, note, prompt, when)
    if docs:
        await conn.execute(insert(SearchDocRow), docs)


async def index_override(
    store: StoreBase, task_id: str, attempt_index: int, event_id: int, note: str
) -> None:
    """An analyst verdict's note; overrides are events, written by the event log's own writer."""
    docs = _docs(task_id, attempt_index, DocKind.NOTE, f"verdict {event_id}", note, utcnow())
    if docs:
        async with store._write_conn() as conn:
            await conn.execute(insert(SearchDocRow), docs)


async def index_tasks(conn: AsyncConnection, task_ids: Iterable[str]) -> None:
    """Everything but titles and text (the triggers' part) of the given tasks, from their rows.

    Used by bulk imports and the backfill; replaces what was there.
    """
    ids = list(task_ids)
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        await conn.execute(
            delete(SearchDocRow).where(
                SearchDocRow.task_id.in_(batch),
                SearchDocRow.kind.in_([DocKind.ANSWER, DocKind.EVIDENCE, DocKind.ISSUE, DocKind.NOTE]),
            )
        )
        docs: list[dict[str, Any]] = []
        attempts = await conn.execute(select(*_ATTEMPT_COLUMNS).where(AttemptRow.task_id.in_(batch)))
        for task_id, index, answer, packet, finished, started in attempts.all():
            docs.extend(_attempt_docs(task_id, index, answer, packet, finished or started or utcnow()))
        validations = await conn.execute(
            select(
                ValidationRow.task_id,
                ValidationRow.attempt_index,
                ValidationRow.result,
                ValidationRow.created_at,
            )
            .where(ValidationRow.task_id.in_(batch))
            .order_by(ValidationRow.created_at)
        )
        latest: dict[tuple[str, int], tuple[dict[str, Any], datetime | None]] = {}
        for task_id, index, result, when in validations.all():
            latest[(task_id, index)] = (result, when)
        for (task_id, index), (result, when) in latest.items():
            docs.extend(_issue_docs(task_id, index, result, when))
        feedback = await conn.execute(
            select(
                FeedbackRow.task_id,
                AttemptRow.index,
                FeedbackRow.id,
                FeedbackRow.note,
                FeedbackRow.prompt,
                FeedbackRow.created_at,
            )
            .outerjoin(AttemptRow, AttemptRow.id == FeedbackRow.attempt_id)
            .where(FeedbackRow.task_id.in_(batch))
        )
        for task_id, index, feedback_id, note, prompt, when in feedback.all():
            docs.extend(_feedback_docs(task_id, index, feedback_id, note, prompt, when))
        overrides = await conn.execute(
            select(EventRow.task_id, EventRow.id, EventRow.payload, EventRow.created_at).where(
                and_(EventRow.task_id.in_(batch), EventRow.kind == EventKind.ANALYST_VERDICT_RECORDED.value)
            )
        )
        for task_id, event_id, payload, when in overrides.all():
            note = str(payload.get("note") or "")
            docs.extend(
                _docs(task_id, payload.get("attempt_index"), DocKind.NOTE, f"verdict {event_id}", note, when)
            )
        if docs:
            await conn.execute(insert(SearchDocRow), docs)


async def backfill_pending(store: StoreBase) -> bool:
    async with store.read_session() as s:
        found = await s.get(SearchMetaRow, BACKFILL_KEY)
    return found is not None


async def backfill(store: StoreBase) -> int:
    """Index every stored task's answers, evidence, issues and notes; returns how many tasks.

    One transaction per batch of tasks, so a large workspace does not hold the write lock for
    the whole pass; the pending mark goes last, so an interrupted backfill runs again in full.
    """
    async with store.read_session() as s:
        ids = list((await s.scalars(select(TaskRow.id).order_by(TaskRow.id))).all())
    for start in range(0, len(ids), _BATCH):
        async with store._write_conn() as conn:
            await index_tasks(conn, ids[start : start + _BATCH])
    async with store._write_conn() as conn:
        await conn.execute(delete(SearchMetaRow).where(SearchMetaRow.key == BACKFILL_KEY))
    return len(ids)


__all__ = [
    "SEGMENT_CHARS",
    "DocKind",
    "backfill",
    "backfill_pending",
    "index_attempt",
    "index_feedback",
    "index_override",
    "index_tasks",
    "index_validation",
    "segments",
]
