"""Search everywhere, on both engines: every kind of passage is indexed where it is written, hits
carry their passage with the match marked, filters narrow, pages continue, and saved views keep."""

from __future__ import annotations

from typing import Any

import pytest

from core.domain import TaskEvidencePacket
from core.domain.evidence import RunEvidence, ToolEvidence
from core.domain.status import TaskStatus
from core.search.index import SEGMENT_CHARS, DocKind
from core.search.query import SearchError, SearchFilters, SearchQuery, SearchService, fts5_query
from core.search.views import SavedView, delete_view, get_view, list_views, save_view
from core.store import Store, search_sql
from core.tasks.override import record_override


def packet(task_id: str, index: int, results: list[str], answer: str) -> dict[str, Any]:
    run = RunEvidence(
        run_id=f"r{index}",
        session_id="s",
        output_text=answer,
        tool_results=[ToolEvidence(tool_name="search", content=c) for c in results],
    )
    p = TaskEvidencePacket(task_id=task_id, attempt_index=index, main_run=run, final_output=answer)
    return p.model_dump(mode="json")


async def seed(store: Store) -> str:
    task = await store.create_task("Where do grey herons nest?", title="Heron nests")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
    await store.update_attempt(
        attempt.id,
        final_output="They nest in tall trees near water.",
        packet=packet(
            task.id,
            1,
            ["Colonies called heronries sit in tall trees.", "The marsh warden counted ninety nests."],
            "They nest in tall trees near water.",
        ),
    )
    await store.add_validation(
        task_id=task.id,
        attempt_id=attempt.id,
        attempt_index=1,
        result={
            "status": "rejected",
            "score": 0.4,
            "category": "unsupported",
            "issues": ["cormorant claim uncited"],
        },
        raw_response="{}",
        prompt=None,
        debug={},
    )
    await store.add_feedback(
        task_id=task.id,
        attempt_id=attempt.id,
        action="revise",
        prompt="Name the reedbed survey.",
        note="check the kingfisher aside",
        reviewer="ana",
        from_status=TaskStatus.NEEDS_REVIEW,
        to_status=TaskStatus.NEEDS_REVISION,
    )
    return task.id


async def test_every_kind_is_found_with_its_passage(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        task_id = await seed(store)
        search = SearchService(store)
        expected = {
            "heron": DocKind.TITLE,
            "grey": DocKind.TEXT,
            "water": DocKind.ANSWER,
            '"marsh warden"': DocKind.EVIDENCE,
            "cormorant": DocKind.ISSUE,
            "kingfisher": DocKind.NOTE,
            "reedbed": DocKind.NOTE,
        }
        for text, kind in expected.items():
            page = await search.search(SearchQuery(text=text))
            assert [(h.task_id, h.kind) for h in page.hits] == [(task_id, kind)], text
        hit = (await search.search(SearchQuery(text='"marsh warden"'))).hits[0]
        assert hit.ref == "E2" and hit.attempt_index == 1
        assert [hit.passage[a:b].lower() for a, b in hit.marks] in (["marsh", "warden"], ["marsh warden"])
        assert "«" in hit.marked() and "ninety" in hit.passage
        assert hit.title == "Heron nests"
    finally:
        await store.close()


async def test_filters_narrow_and_pages_continue(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        ids = []
        for i in range(7):
            task = await store.create_task(f"Puffin count {i}", title=f"Puffins {i}")
            ids.append(task.id)
        search = SearchService(store)
        seen: list[str] = []
        after = None
        while True:
            page = await search.search(
                SearchQuery(text="puffin", limit=3, after=after, filters=SearchFilters(kinds=(DocKind.TEXT,)))
            )
            seen += [h.task_id for h in page.hits]
            if page.more is None:
                break
            after = page.more
        assert sorted(seen) == sorted(ids) and len(seen) == 7
        none = await search.search(SearchQuery(text="puffin", filters=SearchFilters(status="closed")))
        assert none.hits == []
        scored = await search.search(SearchQuery(text="puffin", filters=SearchFilters(min_score=0.5)))
        assert scored.hits == []  # no task has a score yet
        assert (await search.search(SearchQuery(text="puff*", limit=100))).hits
        by_ana = await search.search(SearchQuery(text="puffin", filters=SearchFilters(reviewer="ana")))
        assert by_ana.hits == []
    finally:
        await store.close()


async def test_broad_queries_come_newest_first(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past RANK_LIMIT matches nothing is ranked (that costs a score per match): newest first, paged."""
    monkeypatch.setattr(search_sql, "RANK_LIMIT", 3)
    store = await Store.open(db_url)
    try:
        ids = [(await store.create_task(f"Gannet colony {i}")).id for i in range(7)]
        search = SearchService(store)
        seen: list[str] = []
        after = None
        while True:
            page = await search.search(
                SearchQuery(text="gannet", limit=2, after=after, filters=SearchFilters(kinds=(DocKind.TEXT,)))
            )
            assert not page.ranked
            seen += [h.task_id for h in page.hits]
            if page.more is None:
                break
            after = page.more
        assert seen == ids[::-1]
        assert (await search.search(SearchQuery(text='"colony 4"'))).ranked
    finally:
        await store.close()


async def test_large_evidence_is_found_in_its_segment(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        task = await store.create_task("A long log")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="x")
        big = ("lorem ipsum dolor " * 12_000) + " zanzibar lighthouse keeper " + ("sit amet " * 100)
        assert len(big) > 3 * SEGMENT_CHARS
        await store.update_attempt(attempt.id, packet=packet(task.id, 1, [big], "ok"))
        hits = (await SearchService(store).search(SearchQuery(text='"zanzibar lighthouse"'))).hits
        assert len(hits) == 1 and hits[0].segment == 3 and hits[0].ref == "E1"
        assert "zanzibar" in hits[0].passage.lower()
    finally:
        await store.close()


async def test_override_note_and_reindex_on_new_packet(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        task_id = await seed(store)
        await record_override(store, task_id, status="accepted", note="osprey seen too", reviewer="ana")
        search = SearchService(store)
        hit = (await search.search(SearchQuery(text="osprey"))).hits[0]
        assert hit.kind == DocKind.NOTE and hit.ref.startswith("verdict ")
        attempt = (await store.list_attempts(task_id))[0]
        await store.update_attempt(
            attempt.id, final_output="egrets", packet=packet(task_id, 1, ["only egrets now"], "egrets")
        )
        assert (await search.search(SearchQuery(text='"marsh warden"'))).hits == []
        assert {h.kind for h in (await search.search(SearchQuery(text="egrets"))).hits} == {
            DocKind.ANSWER,
            DocKind.EVIDENCE,
        }
        reviewed = await search.search(SearchQuery(text="heron", filters=SearchFilters(reviewer="ana")))
        assert [h.task_id for h in reviewed.hits] == [task_id]
    finally:
        await store.close()


async def test_saved_views_round_trip(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        await save_view(store, SavedView(name=" herons ", text="heron", filters=SearchFilters(min_score=0.2)))
        await save_view(store, SavedView(name="herons", text="heron nests"))
        views = await list_views(store)
        assert [(v.name, v.text) for v in views] == [("herons", "heron nests")]
        assert (await get_view(store, "herons")).filters == SearchFilters()
        assert await delete_view(store, "herons")
        with pytest.raises(ValueError, match="no saved view"):
            await get_view(store, "herons")
    finally:
        await store.close()


def test_query_language() -> None:
    assert fts5_query('tide "spring tide" ebb*') == '"tide" "spring tide" "ebb"*'
    with pytest.raises(SearchError, match="type a word"):
        fts5_query('  "" ** ')


async def test_a_phrase_inside_chunked_evidence_is_found(db_url: str) -> None:
    """A tool result big enough to be stored as chunks is still read into the index."""
    from core.domain.content import ContentPolicy

    store = await Store.open(db_url)
    store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=32)
    try:
        task = await store.create_task("Where do bitterns boom?", title="Bitterns")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
        filler = "reeds sway in the wind. " * 40
        big = filler + "The warden heard a booming bittern at dawn. " + filler
        await store.update_attempt(
            attempt.id, final_output="In reedbeds.", packet=packet(task.id, 1, [big], "In reedbeds.")
        )
        stored = await store.get_attempt(attempt.id, resolve=False)
        assert stored.packet is not None and "booming bittern" not in str(stored.packet)
        hits = (await SearchService(store).search(SearchQuery(text='"booming bittern"'))).hits
        assert [(h.task_id, h.kind) for h in hits] == [(task.id, DocKind.EVIDENCE)]
    finally:
        await store.close()
