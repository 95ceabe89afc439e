"""A big tool result in the desk: listed from the index, shown a page at a time, found in core.

The workspace's content policy is tiny (chunks of 32 characters, texts over 64 offloaded) and the
desk's page is 320 characters, so a 1,600-character tool result is 50 stored chunks on 5 pages.
Every chunk read goes through a counting wrapper around the store's ``chunk_text``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from sqlalchemy import text

from core.domain import TaskStatus
from core.domain.content import ContentPolicy
from core.workspace import Workspace
from desktop.views.window.main_window import MainWindow
from tests.core.test_search import packet
from tests.desktop.conftest import add_task, run, select, started, wait_signal, wait_until
from tests.desktop.test_main_window import desk as desk  # the window fixture

CHUNK = 32
PAGE = 320


def filler(start: int, n: int) -> str:
    """``n`` characters of unique words (no two chunks alike: dedup must not hide reads)."""
    out = "".join(f"w{i:05d} " for i in range(start, start + n // 7 + 2))
    return out[:n]


def big_text() -> str:
    # page 1: [0, 320) filler; page 2 holds the quote; page 3 the find word and the search phrase.
    page1 = filler(0, PAGE)
    page2 = filler(100, 40) + " the tide tables were wrong " + filler(200, PAGE - 40 - 28)
    page3 = filler(300, 29) + " zebrafish " + filler(400, 28) + " marsh warden " + filler(500, PAGE - 82)
    rest = filler(600, 1600 - 3 * PAGE)
    body = page1 + page2 + page3 + rest
    assert len(body) == 1600
    return body


BIG = big_text()


def chunk_sha(start: int) -> str:
    return hashlib.sha256(BIG[start : start + CHUNK].encode("utf-8")).hexdigest()


def page_chunks(page: int) -> set[str]:
    return {chunk_sha(s) for s in range(page * PAGE, min((page + 1) * PAGE, len(BIG)), CHUNK)}


class ChunkReads:
    """Which chunks the desk read. The window may reload the dossier (a claim's change notice), so
    a page can be read twice; what matters is that no chunk outside it is."""

    def __init__(self) -> None:
        self.count = 0
        self.shas: set[str] = set()

    def reset(self) -> None:
        self.count = 0
        self.shas = set()


@pytest.fixture
def reads(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChunkReads]:
    store = workspace.store
    store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=CHUNK)
    counter = ChunkReads()
    real = store.chunk_text

    async def counted(sha: str) -> str:
        counter.count += 1
        counter.shas.add(sha)
        return await real(sha)

    monkeypatch.setattr(store, "chunk_text", counted)
    yield counter


async def seed(workspace: Workspace) -> tuple[str, str]:
    store = workspace.store
    task = await add_task(workspace, "Check the tide tables", TaskStatus.NEEDS_REVIEW)
    other = await add_task(workspace, "A small task", TaskStatus.NEEDS_REVIEW)
    for t, results in ((task, ["Short note.", BIG]), (other, ["Only a short note here."])):
        attempt = await store.create_attempt(t.id, 1, trigger="initial", prompt=t.text)
        await store.update_attempt(
            attempt.id,
            final_output="An answer.",
            state="finished",
            packet=packet(t.id, 1, results, "An answer."),
        )
    return task.id, other.id


async def page_shown(desk: MainWindow, offset: int) -> None:
    viewer = desk.detail.evidence_view.viewer
    await wait_until(lambda: viewer.is_paged and viewer.page_offset == offset and bool(viewer.text()))
    await desk.ops.wait_idle()


def test_big_item_is_listed_from_the_index_and_paged(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, reads: ChunkReads
) -> None:
    async def scenario() -> None:
        task_id, _ = await seed(workspace)
        reads.reset()  # seeding read the stored packet back; the desk starts from here
        desk.evidence_reader.page_chars = PAGE
        await started(desk)
        await select(desk, task_id)
        await desk.ops.wait_idle()
        view = desk.detail.evidence_view
        assert view.current_evidence_id() == "E1"  # the small item opens, as before
        index = view.model.index_for_evidence_id("E2")
        assert "1,600 chars" in view.model.index(index.row(), 2, index.parent()).data()
        assert reads.count == 0  # listed without reading a chunk

        assert view.select_evidence("E2")
        await page_shown(desk, 0)
        viewer = view.viewer
        assert viewer.text() == BIG[:PAGE]
        assert reads.shas == page_chunks(0)  # one page's chunks, no more
        assert viewer.pager.isVisible()
        assert viewer.page_label.text() == "characters 1–320 of 1,600"

        reads.reset()
        viewer.next_page_button.click()
        await page_shown(desk, PAGE)
        assert viewer.text() == BIG[PAGE : 2 * PAGE]
        assert reads.shas <= page_chunks(1) | page_chunks(0)  # page 2 (page 1 again if reloaded)
        assert page_chunks(1) <= reads.shas
        assert viewer.page_label.text() == "characters 321–640 of 1,600"

        # Keyboard: Ctrl+PgDown turns the page, Ctrl+PgUp turns it back.
        QTest.keyClick(viewer.edit, Qt.Key.Key_PageDown, Qt.KeyboardModifier.ControlModifier)
        await page_shown(desk, 2 * PAGE)
        QTest.keyClick(viewer.edit, Qt.Key.Key_PageUp, Qt.KeyboardModifier.ControlModifier)
        await page_shown(desk, PAGE)

        # End and go-to.
        viewer.end_button.click()
        await page_shown(desk, 4 * PAGE)
        assert viewer.text() == BIG[4 * PAGE :]
        viewer.goto_edit.setText("700")
        QTest.keyClick(viewer.goto_edit, Qt.Key.Key_Return)
        await page_shown(desk, 2 * PAGE)

        # PgDown at the bottom of a page (a 320-character page fits: it is at its bottom) turns it.
        viewer.set_wrap(False)  # unwrapped, the page is one line whatever the pane's width
        QTest.keyClick(viewer.edit, Qt.Key.Key_PageDown)
        await page_shown(desk, 3 * PAGE)

        # A page asked for, then the analyst moves on before it arrives: the late reply is dropped.
        viewer.next_page_button.click()
        assert view.select_evidence("E1")
        await desk.ops.wait_idle()
        assert viewer.text() == "Short note." and not viewer.is_paged and not viewer.pager.isVisible()

    run(qloop, scenario())


def test_find_quote_and_search_hit_land_on_the_right_page(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, reads: ChunkReads
) -> None:
    async def scenario() -> None:
        task_id, _ = await seed(workspace)
        desk.evidence_reader.page_chars = PAGE
        await started(desk)
        await select(desk, task_id)
        view = desk.detail.evidence_view
        viewer = view.viewer
        assert view.select_evidence("E2")
        await page_shown(desk, 0)

        # Ctrl+F on page 1 finds a word that is only on page 3.
        viewer.edit.setFocus()
        QTest.keyClick(viewer.edit, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        viewer.find_bar.edit.setText("ZEBRAFISH")
        await page_shown(desk, 2 * PAGE)
        assert viewer.selected_text() == "zebrafish"
        start = BIG.index("zebrafish")
        await wait_until(lambda: "1 in all" in viewer.find_bar.count_label.text())
        assert viewer.find_bar.count_label.text() == f"at character {start + 1:,} · 1 in all"

        # A validator's quote on page 2 (whitespace and case as the checker allows).
        view.show_quote("E2", "The  TIDE tables\nwere wrong")
        await page_shown(desk, PAGE)
        assert viewer.selected_text() == "the tide tables were wrong"

        # Back to page 1, then a search hit inside page 3.
        viewer.home_button.click()
        await page_shown(desk, 0)
        panel = desk.search_panel
        QTest.keyClick(
            desk.queue.tree,
            Qt.Key.Key_F,
            Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
        )
        panel.query_edit.setText('"marsh warden"')
        searched = wait_signal(panel.sig_searched)
        QTest.keyClick(panel.query_edit, Qt.Key.Key_Return)
        assert (await searched)[0] == 1
        panel.table.activated.emit(panel.model.index(0, 0))  # its task is on screen: opened at once
        await page_shown(desk, 2 * PAGE)
        assert view.current_evidence_id() == "E2"
        assert viewer.selected_text() == "marsh warden"

    run(qloop, scenario())


def test_a_missing_chunk_is_one_line_and_the_desk_keeps_working(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, reads: ChunkReads
) -> None:
    async def scenario() -> None:
        task_id, other_id = await seed(workspace)
        desk.evidence_reader.page_chars = PAGE
        sha = chunk_sha(0)
        async with workspace.store.engine.begin() as conn:
            gone = await conn.execute(text("DELETE FROM content_chunks WHERE sha256 = :s"), {"s": sha})
        assert gone.rowcount == 1
        await started(desk)
        await select(desk, task_id)
        view = desk.detail.evidence_view
        assert view.select_evidence("E2")
        viewer = view.viewer
        await wait_until(lambda: "missing from the workspace" in viewer.status.text())
        assert viewer.status.text() == f"evidence chunk {sha[:12]} is missing from the workspace"
        assert viewer.status.isVisible()
        # Other items and other tasks still open.
        assert view.select_evidence("E1")
        assert viewer.text() == "Short note."
        viewer.status.clear()
        await select(desk, other_id)
        assert view.current_evidence_id() == "E1"
        assert viewer.text() == "Only a short note here."

    run(qloop, scenario())
