"""Writing the search index's rows (``search_docs``); the passages come from ``core.search.index``.

Called from the store's own write transactions (an attempt's packet and answer, a validation, a
feedback row, a bulk import) so a search never misses what the desk shows; see that module and
migration 0009_search for the why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.domain.content import ContentRef
from core.domain.event_codec import read_payload
from core.domain.event_payloads import AnalystVerdictRecord
from core.domain.facts import EventKind
from core.errors import StoreError
from core.progress import advance, expect
from core.search.index import (
    DocKind,
    SegmentCutter,
    doc,
    evidence_items,
    feedback_docs,
    issue_docs,
    passages,
)
from core.store.base import StoreBase
from core.store.chunks import chunk_shas_sync, chunk_text_sync
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

BACKFILL_KEY = "backfill"
_BATCH = 200
_FLUSH_CHARS = 4 << 20  # passages held before an insert: a gigabyte of evidence is never all in memory


class _DocWriter:
    """Buffers ``search_docs`` rows and inserts them a few megabytes at a time."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn
        self._rows: list[dict[str, Any]] = []
        self._chars = 0

    async def add(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self._rows.append(row)
            self._chars += len(row["body"])
        if self._chars >= _FLUSH_CHARS:
            await self.flush()

    async def flush(self) -> None:
        if self._rows:
            await self._conn.execute(insert(SearchDocRow), self._rows)
        self._rows, self._chars = [], 0


async def _streamed_item(
    conn: AsyncConnection,
    task_id: str,
    index: int,
    evidence_id: str,
    sha256: str,
    when: datetime,
    kind: DocKind = DocKind.EVIDENCE,
) -> AsyncIterator[dict[str, Any]]:
    """A big item's passages cut from its chunks, read one at a time in the writing transaction.

    Segments continue across chunk boundaries (``SegmentCutter``). A chunk row gone from the
    workspace ends the item there: what was read stays indexed and the write goes on, because a
    damaged item must not make the rest of the task (or a backfill) unsearchable; ``show`` and the
    report name the missing chunk.
    """
    cutter = SegmentCutter()
    seg = 0
    try:
        for chunk_sha in await conn.run_sync(chunk_shas_sync, sha256):
            for body in cutter.feed(await conn.run_sync(chunk_text_sync, chunk_sha)):
                if body.strip():
                    yield doc(task_id, index, kind, evidence_id, seg, body, when)
                seg += 1
    except StoreError:
        pass
    for body in cutter.finish():
        if body.strip():
            yield doc(task_id, index, kind, evidence_id, seg, body, when)
        seg += 1


async def _attempt_docs(
    conn: AsyncConnection,
    out: _DocWriter,
    task_id: str,
    index: int,
    answer: str | None,
    packet: dict[str, Any] | None,
    when: datetime,
    answer_ref: Any = None,
) -> None:
    """An attempt's answer and evidence passages into ``out``; memory: one chunk plus one segment.

    An answer kept in the chunk store (``answer_ref``, its column empty) is cut from its chunks like
    a big evidence item: a 50 MB answer was read whole and then copied again into its segments."""
    if isinstance(answer_ref, dict) and not answer:
        sha = ContentRef.model_validate(answer_ref).sha256
        async for row in _streamed_item(conn, task_id, index, "", sha, when, DocKind.ANSWER):
            await out.add((row,))
    else:
        await out.add(passages(task_id, index, DocKind.ANSWER, "", answer, when))
    if not packet:
        return
    for item in evidence_items(packet):
        if item.content_ref is None:
            await out.add(passages(task_id, index, DocKind.EVIDENCE, item.evidence_id, item.content, when))
            continue
        async for row in _streamed_item(
            conn, task_id, index, item.evidence_id, item.content_ref.sha256, when
        ):
            await out.add((row,))


async def _clear(
    conn: AsyncConnection, task_id: str, attempt_index: int | None, kinds: Sequence[DocKind]
) -> None:
    await conn.execute(
        delete(SearchDocRow).where(
            SearchDocRow.task_id == task_id,
            SearchDocRow.attempt_index == attempt_index,
            SearchDocRow.kind.in_([k.value for k in kinds]),
        )
    )


async def _replace(
    conn: AsyncConnection,
    task_id: str,
    attempt_index: int | None,
    kinds: Sequence[DocKind],
    docs: list[dict[str, Any]],
) -> None:
    await _clear(conn, task_id, attempt_index, kinds)
    if docs:
        await conn.execute(insert(SearchDocRow), docs)


_ATTEMPT_COLUMNS = (
    AttemptRow.task_id,
    AttemptRow.index,
    AttemptRow.final_output,
    AttemptRow.final_output_ref,
    AttemptRow.packet,
    AttemptRow.finished_at,
    AttemptRow.started_at,
)


async def index_attempt(conn: AsyncConnection, attempt_id: str) -> None:
    """(Re)index an attempt's answer and evidence items from its stored row."""
    found = (await conn.execute(select(*_ATTEMPT_COLUMNS).where(AttemptRow.id == attempt_id))).first()
    if found is None:
        return
    task_id, index, answer, answer_ref, packet, finished, started = found
    await _clear(conn, task_id, index, (DocKind.ANSWER, DocKind.EVIDENCE))
    out = _DocWriter(conn)
    when = finished or started or utcnow()
    await _attempt_docs(conn, out, task_id, index, answer, packet, when, answer_ref)
    await out.flush()


async def index_validation(
    conn: AsyncConnection, task_id: str, attempt_index: int, result: dict[str, Any], when: datetime | None
) -> None:
    """The validator's issues, missing requirements and evidence gaps of one attempt (the latest wins)."""
    await _replace(
        conn, task_id, attempt_index, (DocKind.ISSUE,), issue_docs(task_id, attempt_index, result, when)
    )


async def _attempt_index(conn: AsyncConnection, attempt_id: str | None) -> int | None:
    if attempt_id is None:
        return None
    found = await conn.execute(select(AttemptRow.index).where(AttemptRow.id == attempt_id))
    return found.scalar()


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
    docs = feedback_docs(task_id, await _attempt_index(conn, attempt_id), feedback_id, note, prompt, when)
    if docs:
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
        out = _DocWriter(conn)
        attempts = await conn.execute(select(*_ATTEMPT_COLUMNS).where(AttemptRow.task_id.in_(batch)))
        for task_id, index, answer, answer_ref, stored, finished, started in attempts.all():
            when = finished or started or utcnow()
            await _attempt_docs(conn, out, task_id, index, answer, stored, when, answer_ref)
        await out.flush()
        docs: list[dict[str, Any]] = []
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
            docs.extend(issue_docs(task_id, index, result, when))
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
            docs.extend(feedback_docs(task_id, index, feedback_id, note, prompt, when))
        overrides = await conn.execute(
            select(EventRow.task_id, EventRow.id, EventRow.payload, EventRow.created_at).where(
                and_(EventRow.task_id.in_(batch), EventRow.kind == EventKind.ANALYST_VERDICT_RECORDED.value)
            )
        )
        for task_id, event_id, payload, when in overrides.all():
            verdict = read_payload(AnalystVerdictRecord, payload)
            docs.extend(
                passages(
                    task_id, verdict.attempt_index, DocKind.NOTE, f"verdict {event_id}", verdict.note, when
                )
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
    expect(len(ids), "task")
    for start in range(0, len(ids), _BATCH):
        async with store._write_conn() as conn:
            await index_tasks(conn, ids[start : start + _BATCH])
        advance(len(ids[start : start + _BATCH]), "task")
    async with store._write_conn() as conn:
        await conn.execute(delete(SearchMetaRow).where(SearchMetaRow.key == BACKFILL_KEY))
    return len(ids)


class SearchIndexRepository(StoreBase):
    """A mixin of ``Store``: the index's writes that are not part of another write."""

    async def index_search_note(self, task_id: str, attempt_index: int | None, ref: str, text: str) -> None:
        rows = passages(task_id, attempt_index, DocKind.NOTE, ref, text, utcnow())
        if rows:
            async with self._write_conn() as conn:
                await conn.execute(insert(SearchDocRow), rows)

    async def search_backfill_pending(self) -> bool:
        return await backfill_pending(self)

    async def search_backfill(self) -> int:
        return await backfill(self)


__all__ = [
    "SearchIndexRepository",
    "backfill",
    "backfill_pending",
    "index_attempt",
    "index_feedback",
    "index_tasks",
    "index_validation",
]
