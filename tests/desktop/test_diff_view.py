"""The Diff tab: a known pair of attempts gives the expected added and removed words and issues."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pytestqt.qtbot import QtBot

from core.domain.records import AttemptRecord, TaskRecord, ValidationRecord
from core.tasks.dossier import TaskDossier
from desktop.views.task.detail import TaskDetailView
from desktop.views.task.diff import DiffView

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
ANSWERS = {
    1: "Everest is 8,848 m tall per <b>old</b> surveys",
    2: "Everest is 8,849 m tall per the 2020 survey",
}


def _packet(index: int, start: int, results: list[str]) -> dict[str, Any]:
    tools = [{"tool_name": "search", "content": c} for c in results]
    run = {"run_id": f"r{index}", "session_id": "s", "output_text": ANSWERS[index], "tool_results": tools}
    return {
        "task_id": "t1",
        "attempt_index": index,
        "main_run": run,
        "final_output": ANSWERS[index],
        "evidence_id_start": start,
    }


def make_dossier() -> TaskDossier:
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
                "final_output": ANSWERS[i],
                "validation_status": status,
                "validation_score": None,
                "validation_outcome": None,
                "packet": pkt,
                "started_at": NOW,
                "finished_at": NOW,
            }
        )
        for i, status, pkt in (
            (1, "rejected", _packet(1, 1, ["old survey 8,848"])),
            (2, "accepted", _packet(2, 3, ["old survey 8,848", "2020 survey 8,849"])),
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


def test_known_pair_in_the_diff_tab(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.set_dossier(make_dossier())
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


def test_picking_the_same_attempt_twice_shows_no_change(qtbot: QtBot) -> None:
    view = DiffView()
    qtbot.addWidget(view)
    view.set_dossier(make_dossier())
    view.select_pair(2, 2)
    assert view.diff is not None and view.diff.words_added == [] and view.diff.words_removed == []
    view.set_dossier(None)
    assert view.diff is None and view.note.text() == "A diff needs two attempts."


def test_override_shows_both_verdicts(qtbot: QtBot) -> None:
    from core.domain.records import EventRecord

    mine = {
        "attempt_index": 2, "attempt_id": "a2", "status": "rejected", "category": "incomplete",
        "note": "<i>misses</i> the 2023 resurvey", "reviewer": "ana",
    }  # fmt: skip
    event = EventRecord(
        id=9, session_id="s", run_id=None, task_id="t1", seq=9, kind="analyst_verdict_recorded",
        payload=mine, content=None, created_at=NOW,
    )  # fmt: skip
    dossier = make_dossier().model_copy(update={"events": [event]})
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.set_dossier(dossier)
    label = view.analyst_verdict_label
    assert label.isVisibleTo(view)
    assert "Analyst's verdict (ana): rejected, category incomplete" in label.text()
    assert "<i>misses</i>" in label.text()  # plain text: the note is shown as typed
    assert "the validator said accepted, kept as it was" in label.text()
    assert "accepted" in view.validator_view.verdict_view.toPlainText().lower()  # the judge's own pane
    view.select_attempt(1)  # no override on attempt 1
    assert not label.isVisibleTo(view)
