"""A chunk row gone from the workspace is one clear error that loses nothing (#18 point 3).

The chunk is deleted for real, with SQL on the workspace, on both engines; then ``show``, the
report and a bundle export each fail with the store's one line and write no file, search still
answers for the rest of the workspace, and no row of any table has changed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import delete, select

from core.cli.main import main as cli_main
from core.domain.content import ContentPolicy
from core.search.query import SearchQuery, SearchService
from core.store import Store
from core.store.models import Base, ContentChunkRow, ContentPartRow
from tests.core.test_bundle import make_case

MISSING = "is missing from the workspace"
BIG = "".join(f"reading {i:05d} at the tide gauge\n" for i in range(400))


async def _seed(url: str) -> tuple[str, str, str]:
    """A damaged task (its first evidence chunk deleted) and a healthy one; returns their ids."""
    store = await Store.open(url)
    try:
        store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=256)
        damaged = await make_case(store, evidence=BIG)
        healthy = await store.create_task("Which heron nests in reedbeds?", title="Bittern")
        async with store.read_session() as s:
            first = await s.scalar(
                select(ContentPartRow.chunk_sha)
                .join(ContentChunkRow, ContentChunkRow.sha256 == ContentPartRow.chunk_sha)
                .where(ContentPartRow.idx == 0)
                .order_by(ContentPartRow.content_sha)
            )
        assert first is not None
        async with store._write_conn() as conn:
            await conn.execute(delete(ContentChunkRow).where(ContentChunkRow.sha256 == first))
        return damaged, healthy.id, str(first)
    finally:
        await store.close()


async def _snapshot(url: str) -> dict[str, list[str]]:
    store = await Store.open(url)
    try:
        async with store.read_session() as s:
            return {
                t.name: sorted(repr(tuple(r)) for r in (await s.execute(select(t))).all())
                for t in Base.metadata.sorted_tables
            }
    finally:
        await store.close()


async def _search(url: str, text: str) -> set[str]:
    store = await Store.open(url)
    try:
        return {h.task_id for h in (await SearchService(store).search(SearchQuery(text=text))).hits}
    finally:
        await store.close()


@pytest.fixture
def damaged(db_url: str) -> tuple[str, str, str, str]:
    damaged_id, healthy_id, chunk = asyncio.run(_seed(db_url))
    return db_url, damaged_id, healthy_id, chunk


def _one_line_error(err: str, chunk: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert MISSING in lines[0] and chunk[:12] in lines[0] and "Traceback" not in err


def test_show_report_export_fail_in_one_line_and_search_still_answers(
    damaged: tuple[str, str, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, damaged_id, healthy_id, chunk = damaged
    before = asyncio.run(_snapshot(url))

    assert cli_main(["show", damaged_id, "--db", url]) != 0
    _one_line_error(capsys.readouterr().err, chunk)

    out = tmp_path / "out"
    out.mkdir()
    assert cli_main(["report", damaged_id, "-o", str(out / "report.html"), "--db", url]) != 0
    _one_line_error(capsys.readouterr().err, chunk)
    assert cli_main(["export", damaged_id, "-o", str(out / "case.zip"), "--db", url]) != 0
    _one_line_error(capsys.readouterr().err, chunk)
    assert list(out.iterdir()) == []  # no half report, no bundle, no .part left behind

    # The index was written with the evidence: the rest of the workspace (and what was indexed of
    # the damaged task) is still found.
    assert asyncio.run(_search(url, "heron reedbeds")) == {healthy_id}
    assert asyncio.run(_search(url, '"tide gauge"')) == {damaged_id}
    assert asyncio.run(_snapshot(url)) == before


async def _reindex(url: str) -> None:
    store = await Store.open(url)
    try:
        await store.search_backfill()
    finally:
        await store.close()


def test_a_reindex_over_a_missing_chunk_keeps_the_rest_searchable(
    damaged: tuple[str, str, str, str],
) -> None:
    url, damaged_id, healthy_id, _chunk = damaged
    asyncio.run(_reindex(url))
    assert asyncio.run(_search(url, "heron reedbeds")) == {healthy_id}
    # The damaged task's answer is indexed again; its damaged item ends at the lost chunk.
    assert asyncio.run(_search(url, '"deepest point"')) == {damaged_id}
    assert asyncio.run(_search(url, '"reading 00399"')) == set()
