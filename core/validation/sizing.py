"""Sizing a validation from the packet index: how many tokens the evidence is, without reading it.

The single-pass or chunked decision is taken from cached per-chunk token counts of the big items
(``chunk_token_counts``: each stored chunk is tokenised once per model, ever) plus a count of the
prompt with those items' bodies blank. Only a prompt that fits the validator's window, which is
small by definition, is then read back whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from core.domain.evidence import TaskEvidencePacket
from core.evidence.content import resolved_packet
from core.evidence.render import EvidenceItem, RenderedEvidence, render_task
from core.validation.chunking import ChunkCounts

__all__ = ["SizingStore", "full_rendering", "referenced_tokens"]


class SizingStore(ChunkCounts, Protocol):
    async def resolve_tree(self, value: object) -> object: ...


async def referenced_tokens(
    store: ChunkCounts, items: list[EvidenceItem], model: str, count: Callable[[str], int]
) -> int:
    """Tokens of the text the items hold as references (inline texts are counted with the prompt)."""
    total = 0
    for item in items:
        if item.content_ref is not None:
            total += sum(
                tokens for _s, _n, tokens in await store.chunk_token_counts(item.content_ref, model, count)
            )
    return total


async def full_rendering(store: SizingStore, packets: list[TaskEvidencePacket]) -> RenderedEvidence:
    """The task rendered with every text inline: only for a prompt known to fit one request."""
    resolved = [await resolved_packet(store, p) for p in packets]
    return await asyncio.to_thread(render_task, resolved)
