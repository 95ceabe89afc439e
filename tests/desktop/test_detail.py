"""The task detail pane: evidence viewer, citations, raw response, badges, attempts."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from core.domain.records import AttemptRecord, EventRecord, TaskRecord, ValidationRecord
from core.tasks.dossier import TaskDossier
from desktop.views.task.detail import TaskDetailView
from desktop.views.task.validator import ValidatorView
from desktop.widgets.text_viewer import CHUNK_CHARS, LONG_LINE, JsonHighlighter, TextViewer

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
FACT = "The Lisbon office opened on 3 March 2019."
LONG_RESULT = ("Quarterly filings and unrelated boilerplate text. " * 1100)[:50_500] + "\n" + FACT + "\nEnd."


def task_dict(**over: Any) -> dict[str, Any]:
    base = {
        "id": "t1",
        "title": "When did the Lisbon office open?",
        "text": "Find the opening date of the Lisbon office and cite the source document.",
        "status": "awaiting_feedback",
        "validation_outcome": "force_accepted",
        "team_spec": None,
        "output_schema": None,
        "main_session_id": "s-main",
        "attempt_count": 2,
        "latest_validation_status": "rejected",
        "latest_score": 0.4,
        "latest_category": "incomplete",
        "revision_requested_by": None,
        "read_only": False,
        "origin": None,
        "runner": None,
        "heartbeat_at": None,
        "version": 3,
        "created_at": NOW,
        "updated_at": NOW,
    }
    return {**base, **over}


def packet(index: int, *, main_content: str, warnings: list[str] | None = None) -> dict[str, Any]:
    return {
        "task_id": "t1",
        "attempt_index": index,
        "main_run": {
            "run_id": f"r{index}",
            "session_id": "s-main",
            "output_text": f"Answer {index}",
            "finish_reason": "stop",
            "warnings": warnings or [],
            "transcript": [
                {"role": "user", "content": "When did the Lisbon office open?"},
                {"role": "assistant", "content": "Searching the filings.", "tool_calls": [{"id": "c1"}]},
            ],
            "tool_results": [
                {
                    "tool_name": "search_docs",
                    "tool_call_id": "c1",
                    "content": main_content,
                    "title": "filings",
                },
                {"tool_name": "read_document", "content": "permission denied", "is_error": True},
            ],
        },
        "team_node_results": [
            {
                "node_id": "checker",
                "role": "fact checker",
                "status": "failed",
                "finish_reason": "error",
                "error": "tool budget exhausted",
                "evidence": {
                    "run_id": f"rn{index}",
                    "session_id": "s-node",
                    "finish_reason": "error",
                    "tool_results": [{"tool_name": "search_docs", "content": "Press release: Lisbon, 2019."}],
                },
            }
        ],
        "final_output": f"Answer {index}",
    }


def attempt(index: int, pkt: dict[str, Any], **over: Any) -> AttemptRecord:
    base = {
        "id": f"a{index}",
        "task_id": "t1",
        "index": index,
        "trigger": "initial" if index == 1 else "retry",
        "prompt": "p",
        "state": "finished",
        "finish_reason": "stop",
        "final_output": f"## Answer {index}\n\nThe office opened in **2019** (see *filings*).",
        "validation_status": "rejected",
        "validation_score": 0.4,
        "validation_outcome": None,
        "packet": pkt,
        "started_at": NOW,
        "finished_at": NOW,
    }
    return AttemptRecord.model_validate({**base, **over})


def validation(
    index: int, *, raw: str, warnings: list[str], citations: list[dict[str, Any]]
) -> ValidationRecord:
    result = {
        "status": "rejected",
        "score": 0.4,
        "issues": ["The answer gives the year but not the day."],
        "missing_requirements": ["exact opening date"],
        "evidence_gaps": ["no second source for the date"],
        "category": "incomplete",
        "citations": citations,
        "raw_response": raw,
    }
    return ValidationRecord.model_validate(
        {
            "id": f"v{index}",
            "task_id": "t1",
            "attempt_id": f"a{index}",
            "attempt_index": index,
            "status": "rejected",
            "score": 0.4,
            "category": "incomplete",
            "result": result,
            "raw_response": raw,
            "prompt": "--- system ---\nYou are the validator.\n\n--- user ---\n[E1] tool result ...",
            "debug": {
                "strategy": "chunked" if warnings else "single",
                "chunk_count": 3 if warnings else 0,
                "warnings": warnings,
                "latency_s": 2.5,
                "usage": {"prompt_tokens": 51234, "completion_tokens": 812},
            },
            "created_at": NOW,
        }
    )


CITATIONS = [
    {
        "claim": "The office opened in 2019",
        "evidence_id": "E1",
        "quote": "the lisbon   office OPENED on 3 March 2019",
        "verdict": "supported",
        "check": "verified",
    },
    {
        "claim": "It opened in May",
        "evidence_id": "E3",
        "quote": "opened in May",
        "verdict": "unsupported",
        "check": "quote_not_found",
    },
    {
        "claim": "Board approval",
        "evidence_id": "E9",
        "quote": "x",
        "verdict": "unsupported",
        "check": "unknown_id",
    },
]
WARNINGS = [
    "same-family-validator: validator openai/gpt-4o and agent openai/gpt-4o-mini are both from the openai family",
    "chunked-validation: 3 chunks",
    "unverified-citations: 2 of 3",
]


def make_dossier() -> TaskDossier:
    raw = json.dumps({"status": "rejected", "score": 0.4, "citations": CITATIONS, "ok": True, "n": None})
    return TaskDossier(
        task=TaskRecord.model_validate(task_dict()),
        attempts=[
            attempt(1, packet(1, main_content="First attempt: only the press release was searched.")),
            attempt(
                2,
                packet(2, main_content=LONG_RESULT, warnings=["the process running this run stopped"]),
                validation_outcome="force_accepted",
                state="interrupted",
            ),
        ],
        validations=[
            validation(1, raw="I think it is fine. Not JSON at all {", warnings=[], citations=[]),
            validation(2, raw=raw, warnings=WARNINGS, citations=CITATIONS),
        ],
        feedback=[],
        sessions=[],
        events=[
            EventRecord.model_validate(
                {
                    "id": 1,
                    "session_id": "s-main",
                    "run_id": None,
                    "task_id": "t1",
                    "seq": 9,
                    "kind": "task_interrupted",
                    "payload": {"attempt_index": 2},
                    "content": None,
                    "created_at": NOW,
                }
            )
        ],
    )


def make_view(qtbot: QtBot) -> TaskDetailView:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.resize(1400, 900)
    view.set_dossier(make_dossier())
    return view


def test_empty_state_then_dossier(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.set_dossier(None)
    assert view.empty_label.isVisibleTo(view)
    assert view.empty_label.text() == "Select a task"
    view.set_dossier(make_dossier())
    assert not view.empty_label.isVisibleTo(view)
    assert view.attempt_index == 2
    assert "not endorsed: rejected" in view.outcome_label.text()  # the verdict behind it, as in show
    assert "Lisbon office" in view.task_text_label.full_text()  # shown cut to two lines, whole in the tooltip
    assert "2019" in view.answer_view.toPlainText() and "**" not in view.answer_view.toPlainText()
    view.set_dossier(None)
    assert view.empty_label.isVisibleTo(view)


def test_accepted_is_not_confused_with_force_accepted(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    dossier = make_dossier()
    accepted = dossier.model_copy(
        update={
            "task": TaskRecord.model_validate(task_dict(validation_outcome="accepted")),
            "attempts": [dossier.attempts[0]],
            "validations": [],
            "events": [],
        }
    )
    view.set_dossier(accepted)
    assert "accepted" in view.outcome_label.text()
    assert "force" not in view.outcome_label.text() and "Not endorsed" not in view.badge_texts()


def test_selecting_a_tool_result_shows_its_full_content(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    ev = view.evidence_view
    assert ev.select_evidence("E1")
    assert ev.current_evidence_id() == "E1"
    assert FACT in ev.viewer.displayed_text()  # the fact sits after 50,000 characters
    assert ev.viewer.text() == LONG_RESULT


def test_clicking_a_citation_selects_evidence_and_highlights_quote(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    view.show()
    cits = view.validator_view.citations
    assert cits.topLevelItemCount() == 3
    assert cits.topLevelItem(0).text(0).startswith("✓") and "not found" in cits.topLevelItem(1).text(0)
    item = cits.topLevelItem(0)
    qtbot.mouseClick(cits.viewport(), Qt.MouseButton.LeftButton, pos=cits.visualItemRect(item).center())
    ev = view.evidence_view
    assert ev.tree.currentIndex() == ev.model.index_for_evidence_id("E1")
    assert ev.viewer.selected_text() == FACT.rstrip(".")
    # A citation naming an id the packet does not have says so instead of selecting something else.
    with qtbot.waitSignal(cits.sig_citation_activated) as blocker:
        cits.activate(2)
    assert blocker.args == ["E9", "x"]
    assert "E9 is not an item" in ev.viewer.status.text()
    cits.activate(1)
    assert ev.current_evidence_id() == "E3"
    assert "not found in E3" in ev.viewer.status.text()


def test_raw_response_is_exact_and_pretty_printed_on_request(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    validator = view.validator_view
    stored = make_dossier().validations[1].raw_response
    assert validator.raw_view.toPlainText() == stored  # exactly what was received
    assert validator.raw_is_json and validator.pretty_toggle.isEnabled()
    validator.pretty_toggle.setChecked(True)
    raw = validator.raw_view.toPlainText()
    assert raw.startswith('{\n  "status": "rejected"')
    assert json.loads(raw)["citations"][0]["evidence_id"] == "E1"
    view.select_attempt(1)
    assert validator.raw_view.toPlainText() == "I think it is fine. Not JSON at all {"
    assert not validator.raw_is_json and not validator.pretty_toggle.isEnabled()


def test_validator_tabs_show_prompt_and_debug(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    vv: ValidatorView = view.validator_view
    assert vv.prompt_view.text().startswith("--- system ---")
    assert json.loads(vv.debug_view.text())["chunk_count"] == 3
    verdict = vv.verdict_view.toPlainText()
    for text in ("rejected", "0.40", "incomplete", "exact opening date", "no second source"):
        assert text in verdict


def test_a_big_debug_record_is_laid_out_a_part_at_a_time(qtbot: QtBot) -> None:
    """A chunked validation of a gigabyte keeps a reply per chunk in its debug: the Debug tab lays
    out (and colours) a first part, the rest on scrolling, so selecting the task stays quick."""
    from desktop.views.task.validator import DEBUG_CHUNK_CHARS

    vv = ValidatorView()
    qtbot.addWidget(vv)
    replies = [json.dumps({"findings": [], "notes": f"chunk {i} reviewed"}) for i in range(6000)]
    base = validation(1, raw='{"status": "rejected"}', warnings=[], citations=[])
    record = base.model_copy(update={"debug": {"chunk_raw_responses": replies}})
    vv.set_validation(record)
    whole = vv.debug_view.text()
    assert len(whole) > 4 * DEBUG_CHUNK_CHARS and json.loads(whole)["chunk_raw_responses"] == replies
    assert len(vv.debug_view.displayed_text()) == DEBUG_CHUNK_CHARS
    assert not vv.debug_view.is_fully_loaded()
    vv.debug_view.load_all()
    assert vv.debug_view.displayed_text() == whole


def test_badges_for_warnings(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    badges = view.badge_texts()
    for text in (
        "Not endorsed",
        "Interrupted run",
        "Chunked validation (3 chunks)",
        "Unverified citations (2)",
    ):
        assert text in badges
    # True of the whole configuration: said once in the status bar, not on every task.
    assert "Same-family validator" not in badges
    assert "Same-family validator" in view.validator_view.verdict_view.toPlainText()
    assert all(label.isVisibleTo(view) for label in view.badges)
    view.select_attempt(1)
    assert view.badge_texts() == []


def test_attempt_selector_switches_packets(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    ev = view.evidence_view
    assert view.attempt_combo.currentText().startswith("Attempt 2 of 2")
    with qtbot.waitSignal(view.sig_attempt_changed) as blocker:
        view.select_attempt(1)
    assert blocker.args == [1]
    assert ev.select_evidence("E1")
    assert ev.viewer.text().startswith("First attempt")
    assert "Answer 1" in view.answer_view.toPlainText()
    view.attempt_combo.setCurrentIndex(1)
    assert view.attempt_index == 2
    ev.select_evidence("E1")
    assert FACT in ev.viewer.text()
    try:
        view.select_attempt(7)
    except ValueError as exc:
        assert "no attempt 7" in str(exc)
    else:
        raise AssertionError("an unknown attempt must be refused")


def test_viewer_lays_out_one_chunk_of_short_lines_from_ten_megabytes(qtbot: QtBot) -> None:
    """What keeps a 10 MB single line fast (Qt lays out a block whole): the editor is given one
    chunk, broken into short display lines. The time it takes is measured by benchmarks/bench_desk.py,
    not asserted here, where it would depend on how busy the machine is."""
    viewer = TextViewer()
    qtbot.addWidget(viewer)
    viewer.resize(800, 600)
    viewer.show()
    one_line = "x" * 10_000_000 + "NEEDLE in a haystack" + "y" * 1000
    viewer.set_text(one_line)
    shown = viewer.displayed_text()
    assert 0 < len(shown) <= CHUNK_CHARS
    assert max(len(line) for line in shown.split("\n")) <= LONG_LINE
    assert not viewer.is_fully_loaded()
    assert viewer.highlight("needle IN a  haystack")  # beyond the loaded chunk: loads up to it
    assert viewer.selected_text().replace("\n", "") == "NEEDLE in a haystack"
    assert not viewer.highlight("not there")


def test_viewer_unicode_and_line_endings(qtbot: QtBot) -> None:
    viewer = TextViewer()
    qtbot.addWidget(viewer)
    viewer.set_text("emoji 😀😀 first\r\nsecond line with ‘curly’ quote")
    assert viewer.highlight("'curly' QUOTE")
    assert viewer.selected_text() == "‘curly’ quote"


def test_detail_view_renders_to_an_image(qtbot: QtBot, tmp_path: Path) -> None:
    """The pane paints with a citation active (set DETAIL_SCREENSHOT to keep the PNG and look)."""
    view = make_view(qtbot)
    view.show()
    qtbot.waitExposed(view)
    view.validator_view.citations.activate(0)
    path = os.environ.get("DETAIL_SCREENSHOT") or str(tmp_path / "detail.png")
    image = view.grab()
    assert image.width() > 400 and image.height() > 300
    assert image.save(path)


def test_json_highlighter_colours_tokens_not_their_insides(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    view.show()
    view.validator_view.pretty_toggle.setChecked(True)
    doc = view.validator_view.raw_view.document()
    hl = JsonHighlighter

    def colours(line: str) -> dict[str, str]:
        block = doc.begin()
        while block.isValid() and block.text() != line:
            block = block.next()
        assert block.isValid(), line
        return {
            line[r.start : r.start + r.length]: r.format.foreground().color().name()
            for r in block.layout().formats()
        }

    qtbot.waitUntil(lambda: bool(colours('  "status": "rejected",')))  # highlighting runs on the next tick
    assert colours('  "status": "rejected",') == {'"status"': hl.KEY, '"rejected"': hl.STRING}
    assert colours('  "score": 0.4,') == {'"score"': hl.KEY, "0.4": hl.NUMBER}
    assert colours('  "ok": true,') == {'"ok"': hl.KEY, "true": hl.LITERAL}
    quote = colours('      "quote": "the lisbon   office OPENED on 3 March 2019",')
    assert quote['"the lisbon   office OPENED on 3 March 2019"'] == hl.STRING and len(quote) == 2


def test_copying_the_raw_response_passes_the_redactor(qtbot: QtBot) -> None:
    """A key echoed in a validator's reply is masked on the clipboard, as in a bundle or report."""
    from PySide6.QtWidgets import QApplication

    from desktop.views.task.validator import ValidatorView

    fake_key = "AKIA" + "Q" * 16
    view = ValidatorView()
    qtbot.addWidget(view)
    view.raw_view.setPlainText(f'{{"status": "accepted", "note": "found {fake_key} in the log"}}')
    view.raw_view.selectAll()
    view.raw_view.copy()
    copied = QApplication.clipboard().text()
    assert "found" in copied and "in the log" in copied
    assert fake_key not in copied


def test_a_failed_attempt_says_why_it_has_no_answer(qtbot: QtBot) -> None:
    error = "the model call failed: openai/m: the provider's reply had no choices (empty answer list)"
    pkt = {**packet(1, main_content="x", warnings=[error]), "final_output": ""}
    dossier = TaskDossier(
        task=TaskRecord.model_validate(task_dict(status="failed", validation_outcome=None, attempt_count=1)),
        attempts=[attempt(1, pkt, final_output=None, finish_reason="llm_error", validation_status=None)],
        validations=[],
        feedback=[],
        sessions=[],
        events=[],
    )
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.set_dossier(dossier)
    shown = view.answer_view.toPlainText()
    assert "No answer was produced." in shown and "reply had no choices" in shown


def test_debug_tab_names_the_validator_version_first(qtbot: QtBot) -> None:
    vv = ValidatorView()
    qtbot.addWidget(vv)
    base = validation(1, raw='{"status": "accepted"}', warnings=[], citations=[])
    identity = {"model": "scripted/validator", "templates": {"validation.md.j2": "ab" * 32}}
    debug = {"strategy": "single", "validator_version": "0123456789ab", "validator": identity}
    vv.set_validation(base.model_copy(update={"debug": debug}))
    tab = vv.tabs.tabText(vv.tabs.indexOf(vv.debug_view))
    assert tab == "Debug · validator 0123456789ab"
    assert next(iter(json.loads(vv.debug_view.text()))) == "validator_version"
    vv.set_validation(None)
    assert vv.tabs.tabText(vv.tabs.indexOf(vv.debug_view)) == "Debug"
