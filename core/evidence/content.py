"""The one way to read an evidence item's text, whether it is inline or in the chunk store.

Small items (and every item of a resolved packet, the default) carry their text in ``content``.
A big item read without resolving carries a blank ``content`` and a ``content_ref`` (plus, for a
part of a split item, a ``content_range``): its text is read here chunk by chunk, so a caller that
streams (``show``, export, the desk's pager, chunked validation) holds one chunk, not the task.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from core.domain.content import REF_SUFFIX, ContentRef, has_refs, is_ref
from core.domain.evidence import TaskEvidencePacket, ToolEvidence
from core.errors import StoreError
from core.evidence.render import EvidenceItem

__all__ = [
    "ContentReader",
    "index_packet",
    "item_length",
    "item_range",
    "item_text",
    "iter_item_text",
    "load_packet",
    "materialise",
    "resolved_packet",
]

PIECE = 1 << 20


class ContentReader(Protocol):
    """What of the store this module needs (``core.store.Store`` is one)."""

    def iter_content(self, ref: ContentRef | str) -> AsyncIterator[str]: ...

    async def read_range(self, ref: ContentRef | str, offset: int, length: int) -> str: ...


def _ref_of(item: EvidenceItem | ToolEvidence) -> ContentRef | None:
    return item.content_ref


def _range_of(item: EvidenceItem | ToolEvidence) -> tuple[int, int] | None:
    return item.content_range if isinstance(item, EvidenceItem) else None


def item_length(item: EvidenceItem | ToolEvidence) -> int:
    """The item's length in characters, without reading a stored text."""
    span = _range_of(item)
    if span is not None:
        return span[1]
    ref = _ref_of(item)
    return ref.length if ref is not None else len(item.content)


async def iter_item_text(
    store: ContentReader, item: EvidenceItem | ToolEvidence, piece: int = PIECE
) -> AsyncIterator[str]:
    """The item's text in pieces of at most ``piece`` characters; memory: one stored chunk."""
    ref = _ref_of(item)
    span = _range_of(item)
    if ref is None:
        text = item.content if span is None else item.content[span[0] : span[0] + span[1]]
        for start in range(0, len(text), piece):
            yield text[start : start + piece]
        return
    if span is not None:
        offset, length = span
        for start in range(offset, offset + length, piece):
            yield await store.read_range(ref, start, min(piece, offset + length - start))
        return
    async for chunk in store.iter_content(ref):
        for start in range(0, len(chunk), piece):
            yield chunk[start : start + piece]


async def item_text(store: ContentReader, item: EvidenceItem | ToolEvidence) -> str:
    """The item's whole text: for small items, or a caller that must hold it all (one LLM prompt)."""
    if _ref_of(item) is None and _range_of(item) is None:
        return item.content
    return "".join([p async for p in iter_item_text(store, item)])


async def item_range(
    store: ContentReader, item: EvidenceItem | ToolEvidence, offset: int, length: int
) -> str:
    """Characters ``[offset, offset + length)`` of the item (the desk pages big items with this)."""
    if offset < 0 or length < 0:
        raise StoreError("an evidence range needs a non-negative offset and length")
    span = _range_of(item)
    base, total = span if span is not None else (0, item_length(item))
    end = min(offset + length, total)
    if end <= offset:
        return ""
    ref = _ref_of(item)
    if ref is None:
        return item.content[base + offset : base + end]
    return await store.read_range(ref, base + offset, end - offset)


class TreeResolver(Protocol):
    async def resolve_tree(self, value: Any) -> Any: ...


async def resolved_packet(store: TreeResolver, packet: TaskEvidencePacket) -> TaskEvidencePacket:
    """``packet`` with every chunk reference read back into its text (a no-op without references).

    For consumers that need the whole text in one value, such as a single validator prompt.
    """
    dumped = packet.model_dump(mode="json")
    if not has_refs(dumped):
        return packet
    return TaskEvidencePacket.model_validate(await store.resolve_tree(dumped))


_OUTPUT_KEY = "output_text"


async def _read_outputs(store: ContentReader, value: Any) -> Any:
    if isinstance(value, list):
        return [await _read_outputs(store, v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        if key == _OUTPUT_KEY + REF_SUFFIX and is_ref(value, key):
            out[_OUTPUT_KEY] = "".join([p async for p in store.iter_content(ContentRef.model_validate(v))])
            out[key] = None
        elif key == _OUTPUT_KEY and is_ref(value, key + REF_SUFFIX):
            out.setdefault(key, "")
        else:
            out[key] = await _read_outputs(store, v)
    return out


async def index_packet(store: ContentReader, packet: TaskEvidencePacket) -> TaskEvidencePacket:
    """``packet`` as validation reads it: run and node outputs read back, tool texts left as references.

    Outputs are answers an agent wrote (the renderer compares and cites them by their text), so
    they are read whole; tool results and transcripts, which hold the gigabytes, stay references
    and are read item by item, one prompt at a time (``materialise``).
    """
    dumped = packet.model_dump(mode="json")
    if not has_refs(dumped):
        return packet
    return TaskEvidencePacket.model_validate(await _read_outputs(store, dumped))


class AttemptReader(ContentReader, Protocol):
    async def get_attempt(self, attempt_id: str, *, resolve: bool = True) -> object: ...


async def load_packet(store: AttemptReader, attempt_id: str) -> TaskEvidencePacket | None:
    """An attempt's packet as an index: big texts stay references (read them with this module)."""
    attempt = await store.get_attempt(attempt_id, resolve=False)
    packet = getattr(attempt, "packet", None)
    return TaskEvidencePacket.model_validate(packet) if packet else None


async def materialise(store: ContentReader, items: list[EvidenceItem]) -> list[EvidenceItem]:
    """Copies of ``items`` with their text inline, for one prompt: the caller holds this chunk only."""
    out: list[EvidenceItem] = []
    for item in items:
        if item.content_ref is None and item.content_range is None:
            out.append(item)
        else:
            text = await item_text(store, item)
            out.append(item.model_copy(update={"content": text, "content_ref": None, "content_range": None}))
    return out
