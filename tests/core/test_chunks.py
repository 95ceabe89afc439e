"""Evidence as content: chunked, deduplicated, streamed texts on both engines (#18 point 3)."""

from __future__ import annotations

import itertools

from sqlalchemy import func, select

from core.domain.content import ContentPolicy
from core.store import Store
from core.store.models import ContentChunkRow, ContentObjectRow, ContentOwnerRow, EventRow

TINY = ContentPolicy(inline_limit=16, chunk_chars=8)
# Multibyte characters (2, 3 and 4 UTF-8 bytes) placed so chunk cuts fall between and beside them.
MIXED = "aé€😀" * 50 + "tail-" + "ß" * 13


async def _count(store: Store, model: type) -> int:
    async with store.read_session() as s:
        return int(await s.scalar(select(func.count()).select_from(model)) or 0)


async def test_round_trip_across_chunk_boundaries_and_ranges(store: Store) -> None:
    store.content_policy = TINY
    ref = await store.put_content(MIXED)
    assert (
        ref.length == len(MIXED) and ref.n_bytes == len(MIXED.encode()) and ref.chunks == -(-len(MIXED) // 8)
    )
    assert await store.read_content(ref) == MIXED
    pieces = [p async for p in store.iter_content(ref)]
    assert all(len(p) <= 8 for p in pieces) and "".join(pieces) == MIXED
    for offset, length in [(0, 1), (7, 2), (8, 8), (5, 30), (len(MIXED) - 3, 10), (len(MIXED), 5), (3, 0)]:
        assert await store.read_range(ref, offset, length) == MIXED[offset : offset + length]


async def test_same_content_twice_is_one_set_of_chunks(store: Store) -> None:
    store.content_policy = TINY
    first = await store.put_content("x" * 64 + "y" * 64)
    chunks = await _count(store, ContentChunkRow)
    assert chunks == 2  # eight chunks of "xxxxxxxx" / "yyyyyyyy": two distinct hashes
    second = await store.put_content("x" * 64 + "y" * 64)
    assert second == first
    assert await _count(store, ContentChunkRow) == 2 and await _count(store, ContentObjectRow) == 1


async def test_big_event_content_is_chunked_and_reads_back(store: Store) -> None:
    store.content_policy = TINY
    task = await store.create_task("chunked evidence")
    session = await store.create_session(task_id=task.id, kind="main")
    big = MIXED * 3
    await store.append_event(
        session.id, "tool_result_recorded", {"tool_name": "t"}, content=big, task_id=task.id
    )
    await store.append_event(
        session.id, "tool_result_recorded", {"tool_name": "t"}, content="small", task_id=task.id
    )
    async with store.read_session() as s:
        stored = (await s.execute(select(EventRow.content, EventRow.payload).order_by(EventRow.seq))).all()
        longest = await s.scalar(select(func.max(func.length(ContentChunkRow.data))))
    assert stored[0][0] is None and stored[0][1]["content_ref"]["length"] == len(big)
    assert stored[1][0] == "small"  # small contents stay inline, exactly as before
    # No stored value is bigger than a chunk (8 characters, at most 4 bytes each) plus overhead.
    assert longest is not None and longest <= 8 * 4 + 16
    events = await store.get_session_events(session.id)
    assert [e.content for e in events] == [big, "small"]
    raw = await store.get_session_events(session.id, resolve=False)
    assert raw[0].content is None and raw[0].payload["content_ref"]["sha256"]


async def test_packet_is_stored_as_an_index_and_read_back_whole(store: Store) -> None:
    store.content_policy = TINY
    task = await store.create_task("packet")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    packet = {
        "task_id": task.id,
        "main_run": {
            "output_text": "short",
            "output_text_ref": None,
            "tool_results": [{"tool_name": "t", "content": MIXED, "content_ref": None}],
        },
        "team_node_results": [{"node_id": "n", "output_text": MIXED + "!", "output_text_ref": None}],
    }
    updated = await store.update_attempt(attempt.id, packet=packet)
    # The writer gets the index back: resolving there read a whole task at every attempt's end.
    assert updated.packet is not None and updated.packet["main_run"]["tool_results"][0]["content"] == ""
    raw = await store.get_attempt(attempt.id, resolve=False)
    assert raw.packet is not None
    item = raw.packet["main_run"]["tool_results"][0]
    assert item["content"] == "" and item["content_ref"]["length"] == len(MIXED)
    assert raw.packet["main_run"]["output_text"] == "short"
    assert (await store.get_attempt(attempt.id)).packet == packet
    assert [a.packet for a in await store.list_attempts(task.id)] == [packet]


async def test_cached_token_counts_count_each_chunk_once(store: Store) -> None:
    store.content_policy = TINY
    ref = await store.put_content("abcdefgh" * 3 + "zz")
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text) // 2

    first = await store.chunk_token_counts(ref, "m", count)
    assert first == [(0, 8, 4), (8, 8, 4), (16, 8, 4), (24, 2, 1)]
    assert len(calls) == 2  # "abcdefgh" once (three equal chunks), "zz" once
    assert await store.chunk_token_counts(ref, "m", count) == first
    assert len(calls) == 2  # all cached
    await store.chunk_token_counts(ref, "other-model", count)
    assert len(calls) == 4


async def test_sweep_keeps_owned_content_and_drops_orphans(store: Store) -> None:
    store.content_policy = TINY
    task = await store.create_task("owner")
    kept = await store.put_content("k" * 40, owner=task.id)
    await store.put_content("o" * 40, owner="gone-task")
    await store.put_content("p" * 40)
    assert await store.sweep_content() >= 2
    assert await store.read_content(kept) == "k" * 40
    assert await _count(store, ContentObjectRow) == 1 and await _count(store, ContentOwnerRow) == 1


async def test_plan_from_cached_counts_never_retokenises_the_evidence(store: Store) -> None:
    """Chunk planning counts each stored chunk once; planning again tokenises headers only."""
    from core.domain.evidence import RunEvidence, TaskEvidencePacket, ToolEvidence
    from core.evidence.content import item_text, materialise
    from core.evidence.render import render_packet
    from core.validation.chunking import plan_chunks_cached

    store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=100)
    big = "".join(f"line {i} é€ of the big result\n" for i in range(200))
    task = await store.create_task("plan")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    packet = TaskEvidencePacket(
        task_id=task.id,
        attempt_index=1,
        main_run=RunEvidence(
            run_id="r",
            session_id="s",
            tool_results=[
                ToolEvidence(tool_name="t", content=big),
                ToolEvidence(tool_name="u", content="small"),
            ],
        ),
    )
    await store.update_attempt(attempt.id, packet=packet.model_dump(mode="json"))
    from core.evidence.content import load_packet

    index = await load_packet(store, attempt.id)
    assert index is not None
    items = render_packet(index).items
    assert items[0].content == "" and items[0].content_ref is not None

    calls: list[int] = []

    def count(text: str) -> int:
        calls.append(len(text))
        return max(1, len(text) // 4)

    plan = await plan_chunks_cached(items, chunk_tokens=300, count=count, store=store, model="m")
    first_calls = len(calls)
    assert max(calls) < 400  # never a pass over the whole item (it has thousands of characters)
    parts = [p for chunk in plan for p in chunk if p.evidence_id == items[0].evidence_id]
    assert len(parts) > 1
    ranges = [p.content_range for p in parts]
    assert ranges[0] is not None and ranges[0][0] == 0
    assert all(a is not None and b is not None and a[0] + a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert "".join([await item_text(store, p) for p in parts]) == big  # every character, once, in order
    shown = await materialise(store, parts)
    assert all(p.content and p.content_ref is None for p in shown)

    calls.clear()
    again = await plan_chunks_cached(items, chunk_tokens=300, count=count, store=store, model="m")
    assert again == plan
    assert len(calls) < first_calls and max(calls) < 400  # headers only: chunk counts came from the cache


async def test_a_viewer_lists_an_index_and_pages_a_big_item(store: Store) -> None:
    """The desk's path: list items without their text, then read ranged pages of one (#18.3)."""
    from core.domain.evidence import RunEvidence, TaskEvidencePacket, ToolEvidence
    from core.tasks.dossier import evidence_index, evidence_page

    store.content_policy = TINY
    task = await store.create_task("pages")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    packet = TaskEvidencePacket(
        task_id=task.id,
        attempt_index=1,
        main_run=RunEvidence(
            run_id="r", session_id="s", tool_results=[ToolEvidence(tool_name="t", content=MIXED)]
        ),
    )
    await store.update_attempt(attempt.id, packet=packet.model_dump(mode="json"))
    items = await evidence_index(store, task.id, 1)
    assert items[0].content == "" and items[0].content_ref is not None
    pages, offset = [], 0
    while True:
        page = await evidence_page(store, items[0], offset, 37)
        pages.append(page.text)
        offset += len(page.text)
        if not page.more:
            break
    assert page.total == len(MIXED) and "".join(pages) == MIXED and len(pages) == -(-len(MIXED) // 37)
    assert await evidence_index(store, task.id, 2) == []
