"""Writing the search index: one ``search_docs`` row per passage, written with what it indexes.

Titles and task text are kept by triggers (migration 0009_search). Everything else is written here,
called from the store's own write transactions (an attempt's packet and answer, a validation, a
feedback row, a bulk import) or right after an override's event, so a search never misses what
the desk already shows. Large texts are indexed in overlapping 64 KiB segments: a hit names the
segment it is in, a phrase across a boundary is still found (the overlap is longer than any phrase
anyone types), and no PostgreSQL ``tsvector`` approaches its 1 MB limit.

Existing workspaces are backfilled lazily: the migration leaves ``search_meta.backfill = pending``
and the first search (``SearchService``) or ``evidence-desk search --reindex`` runs ``backfill``.
This module builds the passages (pure); ``core.store.search_index`` writes them.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from core.domain.evidence import TaskEvidencePacket

if TYPE_CHECKING:
    from core.evidence.render import EvidenceItem

SEGMENT_CHARS = 65_536
OVERLAP_CHARS = 512


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


class SegmentCutter:
    """``segments`` over a text that arrives in pieces (a big item's stored chunks, one at a time).

    The same segments as ``segments`` of the whole text, boundaries continuing across pieces, so a
    phrase that straddles two chunks is still inside one segment. Holds one segment plus the piece
    being cut, never the text.
    """

    def __init__(self, segment: int = SEGMENT_CHARS, overlap: int = OVERLAP_CHARS) -> None:
        self._segment = segment
        self._overlap = overlap
        self._buf = ""
        self._cut = False

    def feed(self, piece: str) -> list[str]:
        """The segments ``piece`` completes: each is known whole once text exists past its end."""
        buf = self._buf + piece
        width = self._segment + self._overlap
        out: list[str] = []
        start = 0
        while len(buf) - start > width:
            out.append(buf[start : start + width])
            start += self._segment
        self._buf = buf[start:]
        self._cut = self._cut or bool(out)
        return out

    def finish(self) -> list[str]:
        """The last segments: the tail (and, past a cut, the overlap-only piece ``segments`` ends with)."""
        buf, self._buf = self._buf, ""
        if not self._cut:
            return [buf] if buf else []
        out = [buf]
        if len(buf) > self._segment:
            out.append(buf[self._segment :])
        return out


def evidence_items(packet: dict[str, Any]) -> list[EvidenceItem]:
    """Every item of an attempt's packet as the desk numbers them, big texts left as references.

    The one place that reads evidence for the index: inline texts are in ``content``; an item with
    a ``content_ref`` is streamed from its chunks by the writer (``core.store.search_index``).
    """
    from core.evidence.render import render_packet  # core.evidence imports the store, which imports this

    try:
        parsed = TaskEvidencePacket.model_validate(packet)
    except ValidationError:
        # A packet of an older or foreign shape: its evidence goes unindexed rather than the
        # write that stores it failing (the packet itself is kept as it came).
        return []
    rendered = render_packet(parsed, include_final_output=False)
    return [item for item in rendered.items if item.content_ref is not None or item.content.strip()]


def _evidence_texts(packet: dict[str, Any]) -> list[tuple[str, str]]:
    """(evidence id, full text) of the inline items of a packet (a resolved one has no others)."""
    return [(i.evidence_id, i.content) for i in evidence_items(packet) if i.content_ref is None]


def passages(
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
        doc(task_id, attempt_index, kind, ref, i, body, created_at) for i, body in enumerate(segments(text))
    ]


def doc(
    task_id: str,
    attempt_index: int | None,
    kind: DocKind,
    ref: str,
    seg: int,
    body: str,
    created_at: datetime | None,
) -> dict[str, Any]:
    """One ``search_docs`` row: a passage of ``ref`` (segment ``seg``)."""
    return {
        "task_id": task_id,
        "attempt_index": attempt_index,
        "kind": kind.value,
        "ref": ref,
        "seg": seg,
        "body": body,
        "created_at": created_at,
    }


def attempt_docs(
    task_id: str, index: int, answer: str | None, packet: dict[str, Any] | None, when: datetime
) -> list[dict[str, Any]]:
    docs = passages(task_id, index, DocKind.ANSWER, "", answer, when)
    if packet:
        for evidence_id, text in _evidence_texts(packet):
            docs.extend(passages(task_id, index, DocKind.EVIDENCE, evidence_id, text, when))
    return docs


def issue_docs(
    task_id: str, attempt_index: int, result: dict[str, Any], when: datetime | None
) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for field, label in (("issues", "issue"), ("missing_requirements", "missing"), ("evidence_gaps", "gap")):
        for i, text in enumerate(result.get(field) or []):
            docs.extend(passages(task_id, attempt_index, DocKind.ISSUE, f"{label} {i + 1}", str(text), when))
    return docs


def feedback_docs(
    task_id: str,
    attempt_index: int | None,
    feedback_id: str,
    note: str | None,
    prompt: str | None,
    when: datetime,
) -> list[dict[str, Any]]:
    return passages(task_id, attempt_index, DocKind.NOTE, f"note {feedback_id}", note, when) + passages(
        task_id, attempt_index, DocKind.NOTE, f"revision {feedback_id}", prompt, when
    )


async def backfill(store: Any) -> int:
    """Index every stored task's answers, evidence, issues and notes; returns how many tasks."""
    return int(await store.search_backfill())


async def backfill_pending(store: Any) -> bool:
    return bool(await store.search_backfill_pending())


async def index_override(store: Any, task_id: str, attempt_index: int, event_id: int, note: str) -> None:
    """An analyst verdict's note; overrides are events, written by the event log's own writer."""
    await store.index_search_note(task_id, attempt_index, f"verdict {event_id}", note)


__all__ = [
    "SEGMENT_CHARS",
    "DocKind",
    "SegmentCutter",
    "attempt_docs",
    "backfill",
    "backfill_pending",
    "doc",
    "evidence_items",
    "feedback_docs",
    "index_override",
    "issue_docs",
    "passages",
    "segments",
]
