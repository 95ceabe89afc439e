"""Split rendered evidence into chunks that fit the validator's window, dropping nothing.

An item larger than a chunk is cut into parts that keep its evidence id (the header says
"part k/n"), so every byte gathered reaches some chunk and citations still name the original item.
"""

from __future__ import annotations

from collections.abc import Callable

from core.evidence.render import EvidenceItem, render_items

__all__ = ["plan_chunks", "split_item"]

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
