"""Finding in a big item window by window: a match split by a window boundary is found once, at
its true offset, forwards and backwards; quotes match as the citation checker matches them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from core.domain.content import ContentRef
from core.evidence.render import EvidenceItem
from core.tasks.evidence_reader import count_in_item, find_in_item, literal_pattern, quote_regex


class Text:
    """A content reader over one string (the store's two reading calls, nothing else)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.reads: list[tuple[int, int]] = []

    async def iter_content(self, ref: ContentRef | str) -> AsyncIterator[str]:
        yield self.text

    async def read_range(self, ref: ContentRef | str, offset: int, length: int) -> str:
        self.reads.append((offset, length))
        return self.text[offset : offset + length]


def item(text: str) -> EvidenceItem:
    ref = ContentRef(sha256="0" * 64, length=len(text), n_bytes=len(text), chunks=1)
    return EvidenceItem(
        evidence_id="E1", kind="tool_result", label="t", source="s", content="", content_ref=ref
    )


def test_a_match_across_a_window_boundary_is_found_once_both_ways() -> None:
    body = "x" * 95 + "Needle" + "y" * 200 + "needle" + "z" * 50
    reader, it = Text(body), item(body)
    pattern = literal_pattern("NEEDLE")
    assert pattern is not None

    async def scenario() -> None:
        assert await find_in_item(reader, it, pattern, 0, window=100) == (95, 101)
        assert await find_in_item(reader, it, pattern, 101, window=100) == (301, 307)
        assert await find_in_item(reader, it, pattern, 307, window=100) is None
        assert await find_in_item(reader, it, pattern, len(body), backward=True, window=100) == (301, 307)
        assert await find_in_item(reader, it, pattern, 301, backward=True, window=100) == (95, 101)
        assert await find_in_item(reader, it, pattern, 95, backward=True, window=100) is None
        assert await count_in_item(reader, it, pattern, 10, window=100) == 2
        assert await count_in_item(reader, it, pattern, 1, window=100) == 1
        # each read is one window plus the overlap, never the item
        assert max(length for _, length in reader.reads) <= 100 + 4096

    asyncio.run(scenario())


def test_a_quote_matches_across_whitespace_case_and_quote_marks() -> None:
    body = "a" * 50 + "The  ‘tide’\ntables were WRONG" + "b" * 50
    pattern = quote_regex("the 'tide' tables were wrong")
    assert pattern is not None
    found = asyncio.run(find_in_item(Text(body), item(body), pattern, 0, window=40))
    assert found == (50, 50 + len("The  ‘tide’\ntables were WRONG"))
