"""The search index reads big evidence chunk by chunk (#18 point 3): segments continue across
stored chunk boundaries, so a phrase cut in two by a chunk is still found, on both engines."""

from __future__ import annotations

import random
from typing import Any

from sqlalchemy import event, select

from core.domain.content import ContentPolicy
from core.search.index import SegmentCutter, segments
from core.search.query import SearchQuery, SearchService
from core.store import Store
from core.store.models import ContentChunkRow
from tests.core.test_search import packet


def _cut(text: str, sizes: list[int], segment: int, overlap: int) -> list[str]:
    cutter = SegmentCutter(segment, overlap)
    out: list[str] = []
    start = 0
    for size in sizes:
        out += cutter.feed(text[start : start + size])
        start += size
    out += cutter.feed(text[start:])
    return out + cutter.finish()


def _whole(text: str, segment: int, overlap: int) -> list[str]:
    """``segments`` with other sizes: the reference the streamed cutter must reproduce."""
    if not text:
        return []
    if len(text) <= segment + overlap:
        return [text]
    return [text[i : i + segment + overlap] for i in range(0, len(text), segment)]


def test_streamed_segments_are_the_whole_texts_segments() -> None:
    rng = random.Random(18)
    alphabet = "abcdefghij"
    for length in range(60):
        text = "".join(rng.choice(alphabet) for _ in range(length))
        for _ in range(8):
            sizes = [rng.randint(0, 12) for _ in range(rng.randint(0, 8))]
            assert _cut(text, sizes, 10, 3) == _whole(text, 10, 3), (text, sizes)
    big = "word " * 40_000
    assert _cut(big, [1 << 14] * 12, 65_536, 512) == segments(big)


def _boundary_text(chunk: int) -> tuple[str, int]:
    head = "reeds sway in the wind " * 4
    head += " " * ((-(len(head) + len("booming "))) % chunk)
    text = head + "booming bittern at dawn. " + "reeds sway in the wind " * 4
    return text, len(head) + len("booming ")


async def test_a_phrase_across_a_chunk_boundary_is_found(db_url: str) -> None:
    store = await Store.open(db_url)
    store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=32)
    try:
        text, boundary = _boundary_text(32)
        assert boundary % 32 == 0 and text[boundary:].startswith("bittern")
        task = await store.create_task("Where do bitterns boom?", title="Bitterns")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
        chunk_reads: list[str] = []

        def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if "FROM content_chunks" in statement:
                chunk_reads.append(statement)

        event.listen(store.write_engine.sync_engine, "before_cursor_execute", count)
        try:
            await store.update_attempt(attempt.id, final_output="ok", packet=packet(task.id, 1, [text], "ok"))
        finally:
            event.remove(store.write_engine.sync_engine, "before_cursor_execute", count)
        async with store.read_session() as s:
            chunks = [bytes(r) for r in (await s.scalars(select(ContentChunkRow.data))).all()]
        assert len(chunks) > 2
        # The index read the item one stored chunk per statement, never the whole text at once.
        assert len(chunk_reads) >= -(-len(text) // 32)
        assert all("content_chunks.sha256 =" in q and "content_parts" not in q for q in chunk_reads)
        hits = (await SearchService(store).search(SearchQuery(text='"booming bittern"'))).hits
        assert [(h.task_id, h.ref) for h in hits] == [(task.id, "E1")]
    finally:
        await store.close()
