"""Pages of, and matches in, one big evidence item: what the desk's paging viewer asks of core.

The desk never holds a big item: it shows one page (``page``) and finds a word or a validator's
quote (``find``) by walking the item chunk by chunk from an offset, forwards or backwards. Each
window overlaps the next by more than any match can be long, so a match split by a chunk (or
window) boundary is still found, once, at its true offset. Memory: one window.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from core.evidence.content import ContentReader, item_length, item_range
from core.evidence.render import EvidenceItem
from core.tasks.dossier import EvidencePage

__all__ = [
    "DESK_PAGE_CHARS",
    "EvidenceReader",
    "count_in_item",
    "find_in_item",
    "literal_pattern",
    "quote_regex",
]

DESK_PAGE_CHARS = 256 * 1024
WINDOW_CHARS = 1 << 20

_QUOTE_VARIANTS = {"'": "['‘’]", "‘": "['‘’]", "’": "['‘’]", '"': '["“”]', "“": '["“”]', "”": '["“”]'}
_WS = re.compile(r"[\s\u00a0]+")


def literal_pattern(needle: str) -> re.Pattern[str] | None:
    """The find bar's matching: literal and case-insensitive."""
    return re.compile(re.escape(needle), re.IGNORECASE) if needle else None


def quote_regex(quote: str) -> re.Pattern[str] | None:
    """A quote as the citation checker matches it: whitespace-, case- and quote-mark-insensitive."""
    words = [w for w in _WS.split(quote.strip()) if w]
    if not words:
        return None
    parts = ["".join(_QUOTE_VARIANTS.get(ch, re.escape(ch)) for ch in word) for word in words]
    return re.compile(r"[\s\u00a0]+".join(parts), re.IGNORECASE)


def _overlap(source: str) -> int:
    # Whitespace runs may stretch a quote; four times its length (and at least 4 Ki) covers them.
    return max(4 * len(source), 4096)


async def find_in_item(
    store: ContentReader,
    item: EvidenceItem,
    pattern: re.Pattern[str],
    start: int = 0,
    *,
    backward: bool = False,
    window: int = WINDOW_CHARS,
) -> tuple[int, int] | None:
    """[start, end) of the first match at or after ``start`` (or the last one starting before
    ``start`` when ``backward``), reading one window of the item at a time; None if there is none."""
    total = item_length(item)
    overlap = _overlap(pattern.pattern)
    window = max(window, 1)
    if not backward:
        pos = max(0, start)
        while pos < total:
            text = await item_range(store, item, pos, window + overlap)
            for m in pattern.finditer(text):
                if m.start() >= window:
                    break  # the next window sees this one whole
                if m.end() > m.start():
                    return pos + m.start(), pos + m.end()
            pos += window
        return None
    limit = min(start, total)
    while limit > 0:
        lo = max(0, limit - window)
        text = await item_range(store, item, lo, limit - lo + overlap)
        found = [m for m in pattern.finditer(text) if lo + m.start() < limit and m.end() > m.start()]
        if found:
            last = found[-1]
            return lo + last.start(), lo + last.end()
        limit = lo
    return None


async def count_in_item(
    store: ContentReader,
    item: EvidenceItem,
    pattern: re.Pattern[str],
    limit: int,
    *,
    window: int = WINDOW_CHARS,
) -> int:
    """Matches in the item, stopping at ``limit`` (a huge item's count is then "at least")."""
    count, pos = 0, 0
    while count < limit:
        span = await find_in_item(store, item, pattern, pos, window=window)
        if span is None:
            break
        count += 1
        pos = span[1]
    return count


class EvidenceReader:
    """The desk's handle on big evidence: pages and matches, never the whole item.

    Built with a function returning the workspace's store, so building it opens nothing.
    """

    def __init__(self, store: Callable[[], ContentReader], page_chars: int = DESK_PAGE_CHARS) -> None:
        self._store = store
        self.page_chars = page_chars

    async def page(self, item: EvidenceItem, offset: int, length: int | None = None) -> EvidencePage:
        """One page from ``offset`` (clamped into the item)."""
        total = item_length(item)
        size = self.page_chars if length is None else length
        offset = max(0, min(offset, max(total - 1, 0)))
        text = await item_range(self._store(), item, offset, size)
        return EvidencePage(evidence_id=item.evidence_id, offset=offset, text=text, total=total)

    async def find(
        self, item: EvidenceItem, needle: str, start: int, *, backward: bool = False, quote: bool = False
    ) -> tuple[int, int] | None:
        """The next (or previous) occurrence of ``needle`` from ``start``; ``quote`` matches as the
        citation checker does."""
        pattern = quote_regex(needle) if quote else literal_pattern(needle)
        if pattern is None:
            return None
        return await find_in_item(self._store(), item, pattern, start, backward=backward)

    async def count(self, item: EvidenceItem, needle: str, limit: int) -> int:
        pattern = literal_pattern(needle)
        return 0 if pattern is None else await count_in_item(self._store(), item, pattern, limit)

    def page_start(self, offset: int, match_end: int | None = None) -> int:
        """The page showing ``offset``: aligned to pages, unless a match would run past its end."""
        aligned = offset - offset % self.page_chars
        if match_end is not None and match_end > aligned + self.page_chars:
            return max(0, offset - self.page_chars // 2)
        return aligned
