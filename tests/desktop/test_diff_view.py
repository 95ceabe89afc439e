"""The Diff tab: a known pair of attempts gives the expected added and removed words and issues;
the diff is computed only when the tab is shown, in a worker, once per pair."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import qasync
from pytestqt.qtbot import QtBot

from core.domain.records import AttemptRecord, TaskRecord, ValidationRecord
from core.tasks.dossier import TaskDossier
from desktop.views.task.detail import TaskDetailView
from desktop.views.task.diff import COMPUTING_NOTE, DiffView
from tests.desktop.conftest import run, wait_signal

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
ANSWERS = {
    1: "Everest is 8,848 m tall per <b>old</b> surveys",
    2: "Everest is 8,849 m tall per the 2020 survey",
}


def _packet(index: int, start: int, results: list[str], answers: dict[int, str]) -> dict[str, Any]:
    tools = [{"tool_name": "search", "content": c} for c in results]
    main = {"run_id": f"r{index}", "session_id": "s", "output_text": answers[index], "tool_results": tools}
    return {
        "task_id": "t1",
        "attempt_index": index,
        "main_run": main,
        "final_output": answers[index],
        "evidence_id_start": start,
    }


def make_dossier(answers: dict[int, str] = ANSWERS) -> TaskDossier:
    task = TaskRecord.model_validate(
        {
            "id": "t1", "title": "Everest", "text": "How high is Everest?", "status": "awaiting_feedback",
            "validation_outcome": "accepted", "team_spec": None, "output_schema": None, "main_session_id": "s",
            "attempt_count": 2, "latest_validation_status": "accepted", "latest_score": 0.9,
            "latest_category": "none", "revision_requested_by": None, "read_only": False, "origin": None,
            "runner": None, "heartbeat_at": None, "version": 3, "created_at": NOW, "updated_at": NOW,
        }
    )  # fmt: skip
    attempts = [
        AttemptRecord.model_validate(
            {
                "id": f"a{i}",
                "task_id": "t1",
                "index": i,
                "trigger": "initial" if i == 1 else "revision",
                "prompt": "How high?" if i == 1 else "Use the 2020 survey",
                "state": "finished",
                "finish_reason": "stop",
                "final_output": answers[i],
                "validation_status": status,
                "validation_score": None,
                "validation_outcome": None,
                "packet": pkt,
                "started_at": NOW,
                "finished_at": NOW,
            }
        )
        for i, status, pkt in (
            (1, "rejected", _packet(1, 1, ["old survey 8,848"], answers)),
            (2, "accepted", _packet(2, 3, ["old survey 8,848", "2020 survey 8,849"], answers)),
        )
    ]
    validations = [
        ValidationRecord.model_validate(
            {
                "id": f"v{i}",
                "task_id": "t1",
                "attempt_id": f"a{i}",
                "attempt_index": i,
                "status": status,
                "score": score,
                "category": cat,
                "result": {"status": status, "score": score, "category": cat, "issues": issues},
                "raw_response": "{}",
                "prompt": None,
                "debug": {},
                "created_at": NOW,
            }
        )
        for i, status, score, cat, issues in (
            (1, "rejected", 0.3, "goal_missed", ["outdated height", "no source"]),
            (2, "accepted", 0.9, "none", ["no source", "rounding not stated"]),
        )
    ]
    return TaskDossier(
        task=task, attempts=attempts, validations=validations, feedback=[], sessions=[], events=[]
    )


def _show_diff_tab(view: TaskDetailView) -> None:
    view.tabs.setCurrentWidget(view.diff_view)


def test_known_pair_in_the_diff_tab(qtbot: QtBot, qloop: qasync.QEventLoop) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.show()
    view.set_dossier(make_dossier())

    async def shown() -> None:
        painted = wait_signal(view.diff_view.sig_diff_shown)
        _show_diff_tab(view)
        await painted

    run(qloop, shown())
    diff = view.diff_view.diff
    assert diff is not None and (diff.a, diff.b) == (1, 2)
    assert diff.words_removed == ["8,848", "<b>old</b>", "surveys"]
    assert diff.words_added == ["8,849", "the", "2020", "survey"]
    assert diff.verdict.issues_added == ["rounding not stated"]
    assert diff.verdict.issues_removed == ["outdated height"]
    assert [(e.change, e.a_id, e.b_id) for e in diff.evidence] == [("added", None, "E4")]

    page = view.diff_view.browser.toHtml()
    assert "&lt;b&gt;old&lt;/b&gt;" in page  # answer text is text, never markup
    text = view.diff_view.browser.toPlainText()
    assert "Use the 2020 survey" in text  # the revision prompt between them
    assert "issue added: rounding not stated" in text and "issue removed: outdated height" in text
    assert "line-through" in page  # removals struck through


def test_picking_the_same_attempt_twice_shows_no_change(qtbot: QtBot, qloop: qasync.QEventLoop) -> None:
    view = DiffView()
    qtbot.addWidget(view)
    view.show()
    view.set_dossier(make_dossier())

    async def same_pair() -> None:
        painted = wait_signal(view.sig_diff_shown)
        view.select_pair(2, 2)
        await painted

    run(qloop, same_pair())
    assert view.diff is not None and view.diff.words_added == [] and view.diff.words_removed == []


def test_a_long_answer_is_diffed_only_when_the_tab_is_shown_and_only_once(
    qtbot: QtBot, qloop: qasync.QEventLoop
) -> None:
    words = [f"w{i}" for i in range(20_000)]
    revised = [w if i % 50 else f"{w}x" for i, w in enumerate(words)]
    long = make_dossier({1: " ".join(words), 2: " ".join(revised)})
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.show()
    diff = view.diff_view

    view.set_dossier(long)  # selected with the Diff tab hidden
    view.set_dossier(make_dossier())
    view.set_dossier(long)
    assert diff.computations == 0 and diff.diff is None

    async def show_tab() -> None:
        painted = wait_signal(diff.sig_diff_shown)
        _show_diff_tab(view)
        assert diff.note.text() == COMPUTING_NOTE  # the GUI thread went on: the worker diffs
        await painted

    run(qloop, show_tab())
    assert diff.computations == 1
    assert diff.diff is not None and len(diff.diff.words_added) == 400

    view.tabs.setCurrentIndex(0)
    view.set_dossier(long)  # selected again, tab hidden: still nothing computed
    assert diff.computations == 1
    _show_diff_tab(view)  # re-shown: painted from the cache at once
    assert diff.computations == 1
    assert diff.diff is not None and len(diff.diff.words_removed) == 400
