"""Verdict warnings on the desk come from structured data: a code, a count, words never parsed."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from core.domain.facts import VerdictWarning, WarningCode
from core.domain.records import TaskRecord, ValidationRecord
from core.tasks.dossier import TaskDossier
from desktop.views.task.detail import TaskDetailView
from desktop.widgets.plain import plain_tooltip
from tests.desktop.test_detail import NOW, attempt, packet, task_dict

REPO = Path(__file__).resolve().parents[2]
DESKTOP = REPO / "desktop"

# Words chosen to hold no code prefix and no digit: a badge count can only come from ``count``.
STRUCTURED = [
    VerdictWarning(code=WarningCode.UNVERIFIED_CITATIONS, message="two quotes are nowhere", count=2, total=5),
    VerdictWarning(code=WarningCode.CHUNKED_VALIDATION, message="the evidence was split", count=4),
    VerdictWarning(code=WarningCode.CONTEXT_OVERFLOW, message="little room was left for evidence"),
]


def structured_dossier(warnings: list[VerdictWarning], **debug: Any) -> TaskDossier:
    validation = ValidationRecord.model_validate(
        {
            "id": "v1",
            "task_id": "t1",
            "attempt_id": "a1",
            "attempt_index": 1,
            "status": "rejected",
            "score": 0.4,
            "category": "incomplete",
            "result": {"status": "rejected", "score": 0.4, "citations": []},
            "raw_response": "{}",
            "prompt": None,
            "debug": {"warnings": [w.model_dump(mode="json") for w in warnings], **debug},
            "created_at": NOW,
        }
    )
    return TaskDossier(
        task=TaskRecord.model_validate(task_dict(validation_outcome=None, attempt_count=1)),
        attempts=[attempt(1, packet(1, main_content="The Lisbon office opened in 2019."))],
        validations=[validation],
        feedback=[],
        sessions=[],
        events=[],
    )


def test_badges_come_from_codes_and_counts(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.set_dossier(structured_dossier(STRUCTURED, strategy="chunked"))
    assert view.badge_texts() == [
        "Chunked validation (4 chunks)",
        "Unverified citations (2)",
        "Context overflow",
    ]
    tooltips = {label.text(): label.toolTip() for label in view.badges}
    assert tooltips["Unverified citations (2)"] == plain_tooltip("two quotes are nowhere")
    verdict = view.validator_view.verdict_view.toPlainText()
    assert "Unverified citations (2 of 5): two quotes are nowhere" in verdict
    assert "Chunked validation (4): the evidence was split" in verdict


def test_unverified_badge_from_a_warning_alone(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.set_dossier(structured_dossier(STRUCTURED[:1]))
    assert view.badge_texts() == ["Unverified citations (2)"]


def test_truncated_answer_has_a_badge(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    cut = VerdictWarning(
        code=WarningCode.TRUNCATED_ANSWER, message="the answer was cut off at the output limit"
    )
    view.set_dossier(structured_dossier([cut]))
    assert view.badge_texts() == ["Truncated answer"]
    assert view.badges[0].toolTip() == plain_tooltip("the answer was cut off at the output limit")


def test_an_incoherent_verdict_has_a_badge(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    said = "the validator said accepted but its verdict failed low-score (score 0.5 is below 0.6)"
    incoherent = VerdictWarning(code=WarningCode.INCOHERENT_VERDICT, message=said, count=1)
    view.set_dossier(structured_dossier([incoherent]))
    assert view.badge_texts() == ["Incoherent verdict"]
    assert view.badges[0].toolTip() == plain_tooltip(said)
    assert f"Incoherent verdict (1): {said}" in view.validator_view.verdict_view.toPlainText()


def test_a_run_that_ignored_its_tools_has_a_badge(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    dossier = structured_dossier([])
    ignored = packet(1, main_content="The Lisbon office opened in 2019.")
    ignored["main_run"]["tools_ignored"] = True
    dossier.attempts[0] = attempt(1, ignored)
    view.set_dossier(dossier)
    assert view.badge_texts() == ["Tools ignored"]
    assert "called no tool" in view.badges[0].toolTip()


# ---------------------------------------------------------------------------- no parsing in desktop

_TEXT_METHODS = frozenset({"startswith", "endswith", "partition", "rpartition", "split", "removeprefix"})
_RE_FUNCTIONS = frozenset({"search", "match", "fullmatch", "findall", "finditer", "sub", "split"})
_PREFIXES = tuple(f"{code.value}:" for code in WarningCode)


def warning_text_parsing(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    """Calls that pick warnings apart by their words, and literals that spell a code prefix."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith(_PREFIXES)
        ):
            found.append((node.lineno, repr(node.value)))
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        if func.attr in _TEXT_METHODS:
            subject = ast.unparse(func.value)
        elif func.attr in _RE_FUNCTIONS and isinstance(func.value, ast.Name) and func.value.id == "re":
            subject = " ".join(ast.unparse(a) for a in node.args[1:2])
        else:
            continue
        if "warn" in subject.lower() or subject.strip() in ("w", "tip"):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_desktop_never_parses_warning_text() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{line}: {text}"
        for path in sorted(DESKTOP.rglob("*.py"))
        for line, text in warning_text_parsing(path.read_text(encoding="utf-8"), str(path))
    ]
    assert not offenders, "pick warnings by VerdictWarning.code, not by their text:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "snippet",
    [
        'if w.startswith("same-family-validator:"):\n    pass',
        "chunked = [w for w in warnings if w.startswith(PREFIX)]",
        'm = re.search(r"(\\d+)", chunked_warning)',
        'prefix, _, _rest = warning.partition(":")',
        '_KNOWN = ("chunked-validation:", "unverified-citations:")',
        "count = re.findall(r'\\d+', tip)",
    ],
)
def test_checker_catches_warning_parsing(snippet: str) -> None:
    assert warning_text_parsing(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "if w.code is WarningCode.UNVERIFIED_CITATIONS:\n    pass",
        'name = path.name.startswith("report")',
        'pattern = re.compile(r"[\\s]+")',
        'text = "Unverified citations (2)"',
    ],
)
def test_checker_allows_code_based_reading(snippet: str) -> None:
    assert warning_text_parsing(snippet) == []


def test_a_debug_row_that_does_not_read_still_shows_its_badges_and_json(qtbot: QtBot) -> None:
    """The desk reads the typed debug; a damaged row (a count stored as words) falls back to the
    raw JSON for its warnings and keeps the rest of the verdict on screen."""
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.set_dossier(structured_dossier(STRUCTURED, strategy="chunked", chunk_count="several"))
    assert view.badge_texts() == [
        "Chunked validation (4 chunks)",  # the count from the warning, as the row's own is unreadable
        "Unverified citations (2)",
        "Context overflow",
    ]
    assert '"chunk_count": "several"' in view.validator_view.debug_view.text()
    assert "rejected" in view.validator_view.verdict_view.toPlainText()
