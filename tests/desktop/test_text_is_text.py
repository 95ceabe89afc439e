"""Text is text: HTML and Qt rich text from users, models, tools and documents never renders.

One payload goes through every place a foreign string reaches the screen: the title and task
text (header, queue tooltip, confirm and revise dialogs, message bar), the answer (Markdown with
HTML switched off), a tool result (evidence tree and viewer), the validator's issues and its
citations (verdict view, citation rows and their tooltips). Every label showing it must be
``PlainText`` and show it character for character; every text pane must contain the literal tags
(proof they were not interpreted); every tooltip must be the escaped form.
"""

from __future__ import annotations

import html
from collections.abc import Iterator

import pytest
import qasync
from PySide6.QtCore import QModelIndex, QSettings, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QPlainTextEdit, QTextEdit, QWidget
from pytestqt.qtbot import QtBot

from core.domain import TaskStatus
from core.domain.records import TaskRecord
from core.tasks.dossier import TaskDossier
from core.workspace import Workspace
from desktop.dialogs.confirm import ConfirmDialog
from desktop.dialogs.revise import ReviseDialog
from desktop.services import DeskServices
from desktop.views.task.detail import TaskDetailView
from desktop.views.window.main_window import MainWindow
from desktop.widgets.plain import PlainToolTipDelegate
from tests.desktop.conftest import add_task, run, wait_signal
from tests.desktop.test_detail import attempt, packet, task_dict, validation

MARK = "PAYLOAD"
PAYLOAD = (
    f"<h1 style='color:red'>{MARK} title</h1><img src='http://127.0.0.1:9/x.png'>"
    "<a href='http://127.0.0.1:9/'>link</a> &lt;b&gt;bold&lt;/b&gt; <b>bold</b> <qt>qt</qt>"
)
LITERAL = "<h1 style='color:red'>"


def hostile_dossier() -> TaskDossier:
    pkt = packet(1, main_content=f"tool said: {PAYLOAD}")
    citation = {
        "claim": f"claim {PAYLOAD}",
        "evidence_id": "E1",
        "quote": f"quote {PAYLOAD}",
        "verdict": "supported",
        "check": "unchecked",
    }
    record = validation(1, raw=f"raw {PAYLOAD}", warnings=[f"other: {PAYLOAD}"], citations=[citation])
    record.result["issues"] = [f"issue {PAYLOAD}"]
    record.result["recommended_revision_prompt"] = f"revise {PAYLOAD}"
    return TaskDossier(
        task=TaskRecord.model_validate(task_dict(title=PAYLOAD, text=f"task text {PAYLOAD}")),
        attempts=[attempt(1, pkt, final_output=f"answer {PAYLOAD}")],
        validations=[record],
        feedback=[],
        sessions=[],
        events=[],
    )


def assert_nothing_renders(root: QWidget) -> int:
    """Every widget under ``root`` showing the payload shows it as text; returns how many did."""
    seen = 0
    for label in root.findChildren(QLabel):
        if MARK in label.text():
            seen += 1
            assert label.textFormat() == Qt.TextFormat.PlainText, label.text()
            assert LITERAL in label.text()
    for edit in [*root.findChildren(QTextEdit), *root.findChildren(QPlainTextEdit)]:
        text = edit.toPlainText()
        if MARK in text:
            seen += 1
            assert LITERAL in text, f"{type(edit).__name__} interpreted the payload: {text[:200]!r}"
            assert "<img" not in edit.document().toHtml().replace("&lt;img", ""), "an image was embedded"
    for widget in [root, *root.findChildren(QWidget)]:
        tip = widget.toolTip()
        if MARK in tip:
            seen += 1
            assert tip.startswith("<p style='white-space:pre-wrap'>") and html.escape(LITERAL) in tip, tip
    for view in root.findChildren(QAbstractItemView):
        model = view.model()
        if model is None or isinstance(view, QHeaderView):
            continue
        for index in _all_indexes(model, QModelIndex()):
            delegate = view.itemDelegateForIndex(index)
            tip = index.data(Qt.ItemDataRole.ToolTipRole)
            if (
                isinstance(tip, str)
                and MARK in tip
                and not tip.startswith("<p style='white-space:pre-wrap'>")
            ):
                seen += 1
                assert isinstance(delegate, PlainToolTipDelegate), f"{type(view).__name__} guesses at {tip!r}"
                assert LITERAL in delegate.tooltip_text(index)
    return seen


def _all_indexes(model, parent: QModelIndex) -> Iterator[QModelIndex]:  # type: ignore[no-untyped-def]
    for row in range(model.rowCount(parent)):
        for column in range(model.columnCount(parent)):
            index = model.index(row, column, parent)
            yield index
            if column == 0:
                yield from _all_indexes(model, index)


def test_the_detail_pane_shows_html_as_text(qtbot: QtBot) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    view.set_dossier(hostile_dossier())
    assert view.title_label.full_text() == PAYLOAD  # cut to one line on screen, whole in the tooltip
    assert PAYLOAD.startswith(view.title_label.text().rstrip("…"))
    assert view.title_label.textFormat() == Qt.TextFormat.PlainText
    assert f"answer {PAYLOAD.split(' &lt;')[0]}" in view.answer_view.toPlainText()
    assert "<h1" not in view.answer_view.document().toHtml()  # no heading element was made
    verdict = view.validator_view.verdict_view.toPlainText()
    assert f"issue {PAYLOAD}" in verdict  # escaped into the composed HTML, shown exactly
    evidence = view.evidence_view
    for row in range(evidence.model.rowCount(QModelIndex())):
        evidence.select_index(evidence.model.index(row, 0, QModelIndex()))
    assert assert_nothing_renders(view) >= 6


@pytest.fixture
def window(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, ui_state: QSettings
) -> Iterator[MainWindow]:
    services = DeskServices.for_workspace(workspace)
    win = MainWindow(services, ui_state=ui_state)
    qtbot.addWidget(win)
    win.show()
    yield win
    run(qloop, services.ops.wait_idle())
    services.bridge.close()


def test_titles_stay_text_in_the_queue_dialogs_and_messages(
    qloop: qasync.QEventLoop, workspace: Workspace, window: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, f"text {PAYLOAD}", TaskStatus.NEEDS_REVIEW, title=PAYLOAD)
        refreshed = wait_signal(window.model.sig_refreshed)
        window.start()
        await refreshed
        shown = wait_signal(window.sig_dossier_shown)
        assert window.queue.select_task(task.id)
        await shown
        window.abandon()
        dialog = window.active_dialog
        assert isinstance(dialog, ConfirmDialog) and dialog.subject_label is not None
        assert dialog.subject_label.text() == PAYLOAD
        assert assert_nothing_renders(dialog) >= 1
        dialog.reject()
        window.revise()
        revise = window.active_dialog
        assert isinstance(revise, ReviseDialog)
        assert assert_nothing_renders(revise) >= 1
        revise.reject()
        window.show_error(f"Could not close {PAYLOAD}")
        assert window.message_bar.label.textFormat() == Qt.TextFormat.PlainText
        assert assert_nothing_renders(window) >= 3

    run(qloop, scenario())
