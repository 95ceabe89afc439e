"""A revision that produced no answer is never labelled "finished", and its Diff says what failed
instead of showing "None" and every issue "removed" (issue 30, item 6)."""

from __future__ import annotations

import qasync
from pytestqt.qtbot import QtBot

from core.tasks.diff import diff_attempts, format_diff
from core.tasks.dossier import TaskDossier
from desktop.views.task.detail import TaskDetailView
from tests.desktop.conftest import run, wait_signal
from tests.desktop.test_diff_view import make_dossier


def _failed_revision() -> TaskDossier:
    """Attempt 1 answered and was judged; attempt 2 (a revision) ended with a model error."""
    dossier = make_dossier()
    failed = dossier.attempts[1].model_copy(
        update={"finish_reason": "llm_error", "final_output": None, "validation_status": None, "packet": None}
    )
    return dossier.model_copy(
        update={"attempts": [dossier.attempts[0], failed], "validations": dossier.validations[:1]}
    )


def test_a_failed_revision_reads_as_no_answer_and_its_diff_says_why(
    qtbot: QtBot, qloop: qasync.QEventLoop
) -> None:
    view = TaskDetailView()
    qtbot.addWidget(view)
    view.show()
    view.set_dossier(_failed_revision())
    headers = [view.attempt_combo.itemText(i) for i in range(view.attempt_combo.count())]
    assert headers[0] == "Attempt 1 of 2 — rejected"
    assert headers[1] == "Attempt 2 of 2 — no answer (the model call failed)"
    assert not any("finished" in h for h in headers)

    async def shown() -> None:
        painted = wait_signal(view.diff_view.sig_diff_shown)
        view.tabs.setCurrentWidget(view.diff_view)
        await painted

    run(qloop, shown())
    text = view.diff_view.browser.toPlainText()
    assert "Attempt 2 produced no answer: the model call failed." in text
    assert "None" not in text and "issue removed" not in text
    assert "Attempt 2 recorded no evidence to compare." in text and "removed:" not in text
    notice = view.failure_label.text()
    assert notice.startswith("Attempt 2 produced no usable answer (the model call failed)"), notice


def test_the_command_line_diff_says_the_same() -> None:
    diff = diff_attempts(_failed_revision())
    assert diff.no_answer == [(2, "the model call failed")]
    assert diff.no_evidence == [2] and diff.evidence == []
    assert "attempt 2 produced no answer: the model call failed" in format_diff(diff)
