"""Issue 30: the desk on a laptop's screen. The window fits the screen it opens on, the queue's
titles stay readable, the answer under review gets the room, splitters stay where they are, and a
citation click shows its claim in the answer as well as its quote in the evidence."""

from __future__ import annotations

import json
from pathlib import Path

import qasync
from PySide6.QtCore import QEvent, QRect, QSettings
from PySide6.QtWidgets import QApplication

from core.config import load_settings
from core.domain import TaskStatus
from core.workspace import Workspace
from desktop.models.queue_model import COL_TITLE
from desktop.views.window.layout import restore_geometry
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import run, select, started
from tests.desktop.test_main_window import desk as desk  # the window fixture

LAPTOP = QRect(0, 0, 1024, 640)
LONG_TITLE = "Which of the three tide-gauge surveys of the northern estuary is the current one"


def _dbg(coro):  # TEMP
    import traceback

    async def w():
        try:
            return await coro
        except BaseException:
            traceback.print_exc()
            raise

    return w()


def _settle() -> None:
    """Lay out now: only posted layout requests are delivered (processEvents inside a running
    coroutine would step the qasync loop re-entrantly)."""
    for _ in range(4):
        QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)


def test_at_1024x640_the_window_fits_titles_read_and_the_answer_shows_12_lines(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, tmp_path: Path
) -> None:
    async def scenario() -> None:
        task = await desk.services.tasks.create("REVIEWME: tides?", title=LONG_TITLE)
        await desk.services.tasks.run(task.id)
        for n in range(4):
            await desk.services.tasks.create(f"another question {n}")
        await started(desk)
        # A first start (nothing saved) on a 1024x640 screen: the default 1400x860 must shrink.
        restore_geometry(desk, QSettings(str(tmp_path / "fresh.ini"), QSettings.Format.IniFormat), LAPTOP)
        await select(desk, task.id)
        _settle()
        assert LAPTOP.contains(desk.frameGeometry()), desk.frameGeometry()
        assert desk.minimumSizeHint().width() <= 900
        assert desk.queue.tree.header().sectionSize(COL_TITLE) >= 160
        assert desk.detail.answer_pane.visible_lines() >= 12

    run(qloop, _dbg(scenario()))


def test_the_answer_is_the_largest_text_on_the_detail_pane_at_the_default_size(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await desk.services.tasks.create("REVIEWME: tides?")
        await desk.services.tasks.run(task.id)
        await started(desk)
        desk.resize(1400, 860)
        await select(desk, task.id)
        _settle()
        detail = desk.detail
        answer = detail.answer_view.viewport()
        assert answer.height() >= detail.height() / 3
        for other in (detail.evidence_view.viewer.edit, detail.validator_view.raw_view):
            assert answer.width() * answer.height() > other.width() * other.height()
        # The evidence packet and the validator's raw response are side by side.
        evidence_box = detail.evidence_view.geometry()
        raw_box = detail.validator_view.tabs.geometry()
        assert detail.sources.orientation().name == "Horizontal"
        assert evidence_box.width() > 0 and raw_box.width() > 0
        # Wrap is on in every viewer, and each has its toggle.
        assert detail.answer_pane.wrap_toggle.isChecked()
        assert detail.evidence_view.viewer.wrap_toggle.isChecked()
        assert detail.validator_view.raw_wrap_toggle.isChecked()
        detail.evidence_view.viewer.wrap_toggle.setChecked(False)
        assert detail.evidence_view.viewer.edit.lineWrapMode().name == "NoWrap"

    run(qloop, _dbg(scenario()))


def test_the_narrowing_queue_hides_other_columns_before_the_title_drops_below_160(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        await desk.services.tasks.create("a question", title=LONG_TITLE)
        await started(desk)
        header = desk.queue.tree.header()
        for queue_width in (700, 420, 330, 300, 520, 900):
            desk.splitter.setSizes([queue_width, desk.width() - queue_width])
            _settle()
            assert header.sectionSize(COL_TITLE) >= 160, queue_width
        assert not desk.queue.tree.given_way  # wide again: every column the analyst had is back

    run(qloop, _dbg(scenario()))


def test_splitters_stay_put_across_20_selections(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        ids = []
        for n in range(10):
            text = f"REVIEWME question {n}: " + "a long task text that wraps " * (n * 4)
            task = await desk.services.tasks.create(text, title=("A very long title " * n) + str(n))
            await desk.services.tasks.run(task.id)
            ids.append(task.id)
            ids.append((await desk.services.tasks.create(f"open question {n}")).id)
        await started(desk)
        desk.resize(1400, 860)
        await select(desk, ids[0])
        _settle()
        detail = desk.detail
        # The queue | detail split and the side-by-side splits never move; the answer | sources
        # split keeps its proportion when the header above it takes a line more or less.
        first = (desk.splitter.sizes(), detail.reading.sizes(), detail.sources.sizes())
        share = detail.body.sizes()[0] / sum(detail.body.sizes())
        for task_id in ids[1:] + ids[:1]:
            await select(desk, task_id)
            _settle()
            assert (desk.splitter.sizes(), detail.reading.sizes(), detail.sources.sizes()) == first, task_id
            assert abs(detail.body.sizes()[0] / sum(detail.body.sizes()) - share) < 0.01, task_id

    run(qloop, _dbg(scenario()))


def test_the_answers_splitter_position_is_remembered(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, ui_state: QSettings
) -> None:
    async def scenario() -> None:
        await started(desk)
        desk.resize(1400, 860)
        _settle()
        body = desk.detail.body
        total = sum(body.sizes())
        body.setSizes([total - 150, 150])
        desk.save_state()
        again = MainWindow(desk.services, ui_state=ui_state)
        try:
            again.resize(1400, 860)
            again.show()
            _settle()
            assert again.detail.body.sizes() == body.sizes()
        finally:
            again.claims.stop()
            again.close()

    run(qloop, _dbg(scenario()))


def test_a_citation_click_shows_the_claim_in_the_answer_and_the_quote_in_the_evidence(
    qloop: qasync.QEventLoop, tmp_path: Path
) -> None:
    """Its own workspace: a validator that cites, a corpus to search, an answer longer than a screen."""
    claim = "the second high tide arrives twelve hours and twenty-five minutes later"
    filler = "\n\n".join(f"Paragraph {n}: " + "background on tides. " * 30 for n in range(30))
    answer = f"{filler}\n\nFinally, {claim}."
    quote = "Tides"  # the search result names the document it found
    validator = {
        "goal_achievement": "ok",
        "completeness": "ok",
        "rule_compliance": "ok",
        "status": "insufficient_evidence",
        "score": 0.4,
        "citations": [{"claim": claim, "evidence_id": "E1", "quote": quote, "verdict": "supported"}],
    }
    script = {
        "conversations": [
            {
                "model": "agent",
                "turns": [
                    {
                        "content": "",
                        "tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides"}}],
                    },
                    {"content": answer},
                ],
            },
            {"model": "validator", "turns": [{"content": json.dumps(validator)}]},
        ]
    }
    path = tmp_path / "cite.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tides.md").write_text("# Tides\n\nTides rise twice a day on most coasts.\n", encoding="utf-8")
    settings = load_settings(
        script=path, db_url=f"sqlite+aiosqlite:///{tmp_path / 'cite.sqlite3'}", corpus=corpus
    )

    async def scenario() -> None:
        from desktop.services import DeskServices

        ws = await Workspace.open(settings)
        services = DeskServices.for_workspace(ws)
        window = MainWindow(
            services, ui_state=QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
        )
        try:
            window.show()
            task = await services.tasks.create("When is the second high tide?")
            await services.tasks.run(task.id)
            assert (await ws.store.get_task(task.id)).status is TaskStatus.NEEDS_REVIEW
            await started(window)
            await select(window, task.id)
            _settle()
            pane = window.detail.answer_pane
            bar = pane.view.verticalScrollBar()
            assert bar.maximum() > 0 and bar.value() == 0  # the claim is far below the first screen
            window.detail.validator_view.citations.activate(0)
            _settle()
            assert pane.marked_text().lower() == claim.lower()
            assert bar.value() > 0  # scrolled to it
            assert window.detail.evidence_view.current_evidence_id() == "E1"
            assert window.detail.evidence_view.viewer.selected_text().lower() == quote.lower()
        finally:
            window.claims.stop()
            window.close()
            await services.ops.wait_idle()
            await window.live.close()
            services.bridge.close()
            await ws.close()

    run(qloop, _dbg(scenario()))
