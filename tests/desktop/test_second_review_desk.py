"""A second analyst on the desk: 2 queues a decided task for another reviewer; that reviewer's
Ctrl+2 lists it, and nothing they can read tells the first decision until their own S / R / A is
recorded (the widget tree is walked for it); then it shows, and calibration sets the two apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from core.calibration import calibrate
from core.cli.main import main as cli_main
from core.config import Settings, load_settings
from core.domain import TaskStatus
from core.domain.facts import EventKind
from core.workspace import Workspace
from desktop.models.queue_model import COL_STATUS
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import DEFAULT_SCRIPT, add_task, run, select, started, wait_signal
from tests.desktop.test_blind_review import reachable_texts
from tests.gates import wait_until

NOTE = "ANA-NOTE-ZEBRA the second source contradicts the first"


@pytest.fixture
def desk_settings(tmp_path: Path, sqlite_url: str) -> Settings:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"conversations": DEFAULT_SCRIPT}), encoding="utf-8")
    return load_settings(script=script, db_url=sqlite_url, reviewer="bob")


async def _answered(ws: Workspace, title: str) -> str:
    task = await add_task(ws, title, TaskStatus.AWAITING_FEEDBACK)
    store = ws.store
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=title)
    await store.update_attempt(
        attempt.id, final_output="At 14:02.", state="finished", validation_status="accepted"
    )
    await store.add_validation(
        task_id=task.id, attempt_id=attempt.id, attempt_index=1,
        result={"status": "accepted", "score": 0.8, "category": "none"}, raw_response="{}", prompt=None,
        debug={"validator_model": "scripted/validator", "warnings": []},
    )  # fmt: skip
    return task.id


def _decide(url: str, who: str, task_id: str, action: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Decided as an analyst decides from a terminal, by ``who``, with a note and a reason."""
    monkeypatch.setenv("EVIDENCE_DESK_REVIEWER", who)
    assert cli_main(["feedback", task_id, action, "--note", NOTE, "--reason", "wrong_fact", "--db", url]) == 0
    monkeypatch.delenv("EVIDENCE_DESK_REVIEWER")


@pytest.mark.qt_log_ignore("^This plugin does not support raise\\(\\)$")
def test_second_review_is_queued_and_given_blind_to_the_first_decision(
    qloop: qasync.QEventLoop,
    workspace: Workspace,
    desk: MainWindow,
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    anas = run(qloop, _answered(workspace, "When is high tide?"))
    bobs = run(qloop, _answered(workspace, "When is low tide?"))
    _decide(sqlite_url, "ana", anas, "abandon", monkeypatch)
    _decide(sqlite_url, "bob", bobs, "satisfied", monkeypatch)
    capsys.readouterr()

    async def scenario() -> None:
        await started(desk)
        second = desk.reviewing.second
        assert second is not None

        # Bob asks for a second look at his own decision: 2 queues it (for someone else).
        await select(desk, bobs)
        assert not second.pending()  # his own decision: nothing is hidden from him
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_2)
        await desk.services.ops.wait_idle()
        asked = await workspace.store.get_task_events(bobs, kinds=[EventKind.SECOND_REVIEW_REQUESTED])
        assert [e.payload["requested_by"] for e in asked] == ["bob"]

        # Ana's decision, queued by her: Bob's Ctrl+2 lists it in one band, status column hidden.
        from core.tasks.judgements import request_second_review

        await request_second_review(workspace.store, anas, reviewer="ana")
        second.act_due.trigger()
        await desk.services.ops.wait_idle()  # the list is read; its reload starts when it lands
        await desk.services.ops.wait_idle()
        assert [g.key for g in desk.model.looks] == ["second_review"]
        assert desk.model.group_task_ids("second_review") == [anas]
        assert desk.queue.tree.header().isSectionHidden(COL_STATUS)

        await select(desk, anas)
        before = reachable_texts(desk)
        assert "At 14:02." in before and second.banner.isVisibleTo(desk)
        for needle in ("ANA-NOTE-ZEBRA", "Abandoned", "abandoned", "wrong_fact", "wrong fact"):
            assert needle not in before, f"{needle!r} tells the first decision before the second review"

        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S)  # the second review; the task does not move
        # Not the next dossier shown: a reload an earlier change notice started may land first.
        await wait_until(
            lambda: not second.banner.isVisibleTo(desk), what="the first decision to be revealed"
        )
        judged = await workspace.store.get_task_events(anas, kinds=[EventKind.ANALYST_JUDGEMENT_RECORDED])
        assert [(e.payload["phase"], e.payload["reviewer"], e.payload["decision"]) for e in judged] == [
            ("second", "bob", "satisfied")
        ]
        assert (await workspace.store.get_task(anas)).status is TaskStatus.ABANDONED
        after = reachable_texts(desk)
        assert "ANA-NOTE-ZEBRA" in after and not second.banner.isVisibleTo(desk)
        cal = await calibrate(workspace.store)
        assert cal.analysts is not None and cal.analysts.disagreements == [anas]

        refreshed = wait_signal(desk.model.sig_refreshed)
        desk.calibration.cases.chip.click()  # leaving the list brings the usual bands back
        await refreshed
        await desk.services.ops.wait_idle()
        assert desk.model.looks[0].key == "needs_review" and not desk.queue.tree.header().isSectionHidden(
            COL_STATUS
        )

    run(qloop, scenario())
