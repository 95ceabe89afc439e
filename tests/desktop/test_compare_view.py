"""The Compare validators window over a seeded workspace: both sides' figures, McNemar, the
differing cases in three tables, and a clicked case's verdicts side by side."""

from __future__ import annotations

import os
from pathlib import Path

import qasync
from pytestqt.qtbot import QtBot

from core.domain.event_codec import encode
from core.domain.event_payloads import ShadowVerdict
from core.domain.status import TaskStatus
from core.domain.validation import ValidationResult
from core.judge.compare import compare_validators, replay_names
from core.workspace import Workspace
from desktop.ops import CoreOps
from desktop.views.insight.compare import CompareView
from tests.desktop.conftest import run

# (live verdict, candidate verdict, analyst decision) per task
CASES = [
    ("rejected", "accepted", "satisfied"),  # candidate right
    ("rejected", "accepted", "satisfied"),  # candidate right
    ("accepted", "rejected", "satisfied"),  # current right
    ("insufficient_evidence", "rejected", "satisfied"),  # both wrong, differing
    ("accepted", "accepted", "satisfied"),
    ("rejected", "rejected", "abandon"),
]


async def seed(ws: Workspace) -> tuple[list[str], str]:
    store = ws.store
    shadow = await store.create_session(task_id=None, kind="shadow", label="strict@0123456789ab")
    ids = []
    for i, (live, candidate, action) in enumerate(CASES):
        task = await store.create_task(f"Case {i}: what causes tides?")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
        await store.add_validation(
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=1,
            result={"status": live, "score": 0.4, "category": "none", "issues": [f"live issue {i}"]},
            raw_response="{}",
            prompt=None,
            debug={
                "validator_model": "scripted/validator",
                "latency_s": 0.2,
                "validator_version": "aaaaaaaaaaaa",
            },
        )
        await store.add_feedback(
            task_id=task.id, attempt_id=attempt.id, action=action, prompt=None, note=None, reviewer="ana",
            from_status=TaskStatus.AWAITING_FEEDBACK, to_status=TaskStatus.CLOSED,
        )  # fmt: skip
        result = ValidationResult(status=candidate, score=0.7, issues=[f"candidate issue {i}"])
        verdict = ShadowVerdict(
            result=result, status=result.status, attempt_index=1, attempt_id=attempt.id, latency_s=0.1,
            candidate="strict", task_id=task.id, validator_version="0123456789ab",
        )  # fmt: skip
        await store.append_event(shadow.id, *encode(verdict))
        ids.append(task.id)
    return ids, shadow.label


def test_compare_view_shows_both_sides_and_the_differing_cases(
    qtbot: QtBot, qloop: qasync.QEventLoop, workspace: Workspace, tmp_path: Path
) -> None:
    ids, label = run(qloop, seed(workspace))
    ops = CoreOps()
    view = CompareView(
        ops,
        lambda a, b: compare_validators(workspace.store, workspace.settings, a, b),
        lambda: replay_names(workspace.store),
    )
    qtbot.addWidget(view)
    view.resize(1100, 760)
    view.load_choices()
    run(qloop, ops.wait_idle())
    assert view.current_combo.currentText() == "live" and view.candidate_combo.currentText() == label
    loaded: list[bool] = []
    view.sig_loaded.connect(lambda: loaded.append(True))
    view.refresh()
    run(qloop, ops.wait_idle())
    assert loaded == [True]
    assert "3 of 6" in view.current_pane.toPlainText()  # cases 2, 4, 5
    assert "4 of 6" in view.candidate_pane.toPlainText()  # cases 0, 1, 4, 5
    assert "current right only 1, candidate right only 2" in view.mcnemar.text()
    assert [view.tabs.tabText(i) for i in range(3)] == [
        "Candidate right (2)",
        "Current right (1)",
        "Both wrong (1)",
    ]
    assert [r[0] for r in view.groups["candidate_right"].rows] == [ids[0], ids[1]]
    assert view.groups["both_wrong"].rows[0][4:] == ["insufficient_evidence", "rejected"]

    opened: list[str] = []
    view.sig_case_activated.connect(opened.append)
    view.tabs.setCurrentIndex(1)  # the case clicked is on show (the screenshot pairs it with its verdicts)
    table = view.tabs.widget(1)
    qtbot.mouseClick(
        table.viewport(), qtbot_button(), pos=table.visualRect(table.model().index(0, 2)).center()
    )
    assert opened == [ids[2]]
    assert "live issue 2" in view.left_verdict.toPlainText() and "accepted" in view.left_verdict.toPlainText()
    assert "candidate issue 2" in view.right_verdict.toPlainText()
    shot = os.environ.get("EVIDENCE_DESK_TEST_SHOT_DIR")
    if shot:  # screenshots under xvfb-run: EVIDENCE_DESK_TEST_SHOT_DIR=DIR xvfb-run -a pytest this file
        view.show()
        qtbot.waitExposed(view)
        view.grab().save(str(Path(shot) / "compare-validators.png"))


def qtbot_button():  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton
