"""A running task shows its streamed text and recorded evidence; a cancelled one keeps showing it.

The run is held at a gate after its first model call and tool round (the second call's request
holds the first answer's "step one"), so the desk is observed mid-run by events, not by timing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from core.config import load_settings
from core.domain import TaskStatus
from core.domain.facts import AttemptState
from core.workspace import Workspace
from desktop.services import DeskServices
from desktop.views.task.live import GATHERING_NOTE, WORKING_NOTE
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import gates, run, verdict, wait_signal, wait_until
from tests.gates import GatedGateway

FIRST = "Searching the tide tables now (step one)."
ANSWER = "Tides come mainly from the Moon's gravity."
GATE = r"step one"


@pytest.fixture
def workspace(qloop: qasync.QEventLoop, tmp_path: Path, sqlite_url: str) -> Iterator[Workspace]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tides.md").write_text(
        "# Tides\n\nTides are caused mainly by the Moon's gravity.\n", encoding="utf-8"
    )
    script = tmp_path / "script.json"
    conversations = [
        {
            "model": "agent",
            "turns": [
                {
                    "content": FIRST,
                    "tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides moon"}}],
                },
                {"content": ANSWER},
            ],
        },
        {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
    ]
    script.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    # The scripted acceptance cites nothing; this test watches the live run, not the endorsement.
    settings = load_settings(script=script, db_url=sqlite_url, corpus=corpus, coherence_min_citations=0)
    ws = run(qloop, Workspace.open(settings, gateway=GatedGateway(settings, GATE)))
    yield ws
    run(qloop, ws.close())


@pytest.fixture
def desk(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, ui_state: QSettings
) -> Iterator[MainWindow]:
    services = DeskServices.for_workspace(workspace)
    window = MainWindow(services, ui_state=ui_state)
    qtbot.addWidget(window)
    window.show()
    yield window
    gates(workspace).release(GATE)
    run(qloop, services.ops.wait_idle())
    for task in run(qloop, workspace.store.list_tasks()):
        run(qloop, services.tasks.cancel(task.id))
    services.bridge.close()


async def _start_held(desk: MainWindow, workspace: Workspace) -> str:
    refreshed = wait_signal(desk.model.sig_refreshed)
    desk.start()
    await refreshed
    task = await desk.services.tasks.create("What causes tides?")
    shown = wait_signal(desk.sig_dossier_shown)
    await wait_until(lambda: desk.queue.select_task(task.id), what="the new task in the queue")
    await shown
    desk.services.tasks.start(task.id)
    await gates(workspace).wait_arrived(GATE)
    return task.id


def _evidence_text(desk: MainWindow) -> str:
    return desk.detail.evidence_view.viewer.text()


def test_a_running_task_shows_its_streamed_text_and_evidence_as_recorded(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task_id = await _start_held(desk, workspace)
        answer = desk.detail.answer_view
        await wait_until(lambda: FIRST in answer.toPlainText(), what="the streamed text")
        await wait_until(
            lambda: desk.detail.evidence_view.current_evidence_id() == "E1", what="recorded evidence"
        )
        assert "tides.md" in _evidence_text(desk)
        # Mid-run nothing claims an absence.
        assert "No answer was produced" not in answer.toPlainText()
        assert "No evidence packet" not in _evidence_text(desk)
        tree = desk.detail.evidence_view.model
        main_run = tree.data(tree.index(0, 2))  # the Detail column of the "Main run" row
        assert main_run.startswith("running") and "interrupted" not in main_run, main_run
        assert "returned no text" not in desk.detail.validator_view.raw_view.placeholderText()
        running = await workspace.store.get_task(task_id)
        assert running.status is TaskStatus.RUNNING

        gates(workspace).release(GATE)
        await wait_until(
            lambda: (
                desk.detail.dossier is not None
                and desk.detail.dossier.task.status is TaskStatus.AWAITING_FEEDBACK
            ),
            what="the run to land",
        )
        await wait_until(lambda: ANSWER in answer.toPlainText(), what="the recorded answer")
        assert FIRST not in answer.toPlainText()
        assert desk.transcripts.text(task_id) == ""  # the record holds the text now
        # The header states what the task's calls used (scripted models are free).
        usage = desk.detail.usage_label.text()
        assert usage.startswith("Usage: ") and "tokens" in usage and usage.endswith("$0.0000")

    run(qloop, scenario())


def test_a_cancelled_task_shows_the_evidence_it_recorded(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task_id = await _start_held(desk, workspace)
        await wait_until(
            lambda: desk.detail.evidence_view.current_evidence_id() == "E1", what="recorded evidence"
        )
        assert await desk.services.tasks.cancel(task_id)  # the attempt records it was cancelled
        desk.reload_detail_soon()
        await wait_until(
            lambda: (
                desk.detail.dossier is not None
                and desk.detail.dossier.attempts[-1].state is AttemptState.CANCELLED
            ),
            what="the cancelled attempt's dossier",
        )
        dossier = desk.detail.dossier
        # The cancel closed the attempt with the packet its events make (issue 32): its evidence shows.
        assert dossier is not None and dossier.attempts[-1].packet is not None
        assert desk.detail.evidence_view.current_evidence_id() == "E1"
        assert "tides.md" in _evidence_text(desk)
        assert "No evidence packet" not in _evidence_text(desk)
        for note in (WORKING_NOTE, GATHERING_NOTE):
            assert note not in desk.detail.answer_view.toPlainText() + _evidence_text(desk)

    run(qloop, scenario())
