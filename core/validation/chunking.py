"""Split rendered evidence into chunks that fit the validator's window, dropping nothing.

An item larger than a chunk is cut into parts that keep its evidence id (the header says
"part k/n"), so every byte gathered reaches some chunk and citations still name the original item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from core.domain.content import ContentRef
from core.evidence.render import EvidenceItem, render_items

__all__ = ["plan_chunks", "plan_chunks_cached", "split_item", "split_item_cached"]

TokenCounter = Callable[[str], int]


def _block_tokens(item: EvidenceItem, count: TokenCounter) -> int:
    return count(render_items([item], include_warning=False))


def _cut_points(content: str, part_chars: int) -> list[str]:
    parts: list[str] = []
    start = 0
    while start < len(content):
        end = min(len(content), start + part_chars)
        if end < len(content):
            # Prefer a line or word boundary in the last tenth, so quotes are rarely cut mid-word.
            window_start = end - part_chars // 10
            cut = max(content.rfind("\n", window_start, end), content.rfind(" ", window_start, end))
            if cut > start:
                end = cut + 1
        parts.append(content[start:end])
        start = end
    return parts


def split_item(item: EvidenceItem, max_tokens: int, count: TokenCounter) -> list[EvidenceItem]:
    """The item itself when it fits in ``max_tokens``, else parts that each fit and keep its id."""
    if _block_tokens(item, count) <= max_tokens:
        return [item]
    header = _block_tokens(
        item.model_copy(update={"content": "", "source": item.source + " (part 999/999)"}), count
    )
    content_tokens = max(1, count(item.content))
    chars_per_token = len(item.content) / content_tokens
    part_chars = max(64, int((max_tokens - header) * chars_per_token * 0.9))
    while True:
        pieces = _cut_points(item.content, part_chars)
        n = len(pieces)
        parts = [
            item.model_copy(update={"content": piece, "source": f"{item.source} (part {k}/{n})"})
            for k, piece in enumerate(pieces, start=1)
        ]
        if part_chars <= 64 or all(_block_tokens(p, count) <= max_tokens for p in parts):
            return parts
        part_chars = max(64, int(part_chars * 0.8))


def plan_chunks(
    items: list[EvidenceItem], *, chunk_tokens: int, count: TokenCounter
) -> list[list[EvidenceItem]]:
    """Greedy packing in packet order (so a chunk reads like a stretch of the trajectory)."""
    chunks: list[list[EvidenceItem]] = []
    current: list[EvidenceItem] = []
    used = 0
    for item in items:
        for part in split_item(item, chunk_tokens, count):
            tokens = _block_tokens(part, count)
            if current and used + tokens > chunk_tokens:
                chunks.append(current)
                current, used = [], 0
            current.append(part)
            used += tokens
    if current:
        chunks.append(current)
    return chunks


class ChunkCounts(Protocol):
    """What of the store incremental planning needs (``core.store.Store`` is one)."""

    async def chunk_token_counts(
        self, ref: ContentRef | str, model: str, count: Callable[[str], int]
    ) -> list[tuple[int, int, int]]: ...


def _ranges_within(start: int, n_chars: int, tokens: int, avail: int) -> list[tuple[int, int, int]]:
    """One stored chunk too big for a part: cut by its own chars-per-token, never re-counted."""
    if tokens <= avail:
        return [(start, n_chars, tokens)]
    step = max(64, int(n_chars * avail / max(tokens, 1) * 0.9))
    out = []
    for offset in range(start, start + n_chars, step):
        length = min(step, start + n_chars - offset)
        out.append((offset, length, -(-tokens * length // n_chars)))
    return out


async def split_item_cached(
    item: EvidenceItem, max_tokens: int, count: TokenCounter, *, store: ChunkCounts, model: str
) -> list[tuple[EvidenceItem, int]]:
    """Parts of a chunk-stored item with their token counts, from counts cached per stored chunk.

    Only the item's header is tokenised here; its text is counted chunk by chunk once in the life
    of the workspace (``chunk_token_counts``), so planning a packet again costs no tokenizer pass
    over its evidence. A part is a character range of the stored text (``content_range``).
    """
    ref = item.content_ref
    if ref is None:
        return [(part, _block_tokens(part, count)) for part in split_item(item, max_tokens, count)]
    header = _block_tokens(
        item.model_copy(update={"content": "", "source": item.source + " (part 999/999)"}), count
    )
    pieces = await store.chunk_token_counts(ref, model, count)
    total = sum(p[2] for p in pieces)
    if header + total <= max_tokens:
        return [(item, header + total)]
    avail = max(1, max_tokens - header)
    groups: list[tuple[int, int, int]] = []  # (start, length, tokens)
    for start, n_chars, tokens in pieces:
        for sub in _ranges_within(start, n_chars, tokens, avail):
            if groups and groups[-1][2] + sub[2] <= avail and groups[-1][0] + groups[-1][1] == sub[0]:
                g = groups[-1]
                groups[-1] = (g[0], g[1] + sub[1], g[2] + sub[2])
            else:
                groups.append(sub)
    n = len(groups)
    return [
        (
            item.model_copy(
                update={"content_range": (start, length), "source": f"{item.source} (part {k}/{n})"}
            ),
            header + tokens,
        )
        for k, (start, length, tokens) in enumerate(groups, start=1)
    ]


async def plan_chunks_cached(
    items: list[EvidenceItem], *, chunk_tokens: int, count: TokenCounter, store: ChunkCounts, model: str
) -> list[list[EvidenceItem]]:
    """``plan_chunks`` for packets read as an index: big items are planned from cached counts.

    Same greedy packing in packet order; every character of every item lands in exactly one part.
    """
    chunks: list[list[EvidenceItem]] = []
    current: list[EvidenceItem] = []
    used = 0
    for item in items:
        for part, tokens in await split_item_cached(item, chunk_tokens, count, store=store, model=model):
            if current and used + tokens > chunk_tokens:
                chunks.append(current)
                current, used = [], 0
            current.append(part)
            used += tokens
    if current:
        chunks.append(current)
    return chunks
