"""Search everywhere from the desk: Ctrl+Shift+F, a phrase that appears only inside a tool result,
a hit that opens the evidence item with the match selected, and a saved view that comes back."""

from __future__ import annotations

import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from core.domain import TaskStatus
from core.search.index import DocKind
from core.workspace import Workspace
from desktop.views.window.main_window import MainWindow
from tests.core.test_search import packet
from tests.desktop.conftest import add_task, run, started, wait_signal, wait_until
from tests.desktop.test_main_window import desk as desk  # the window fixture

PHRASE = "marsh warden"


async def seed(workspace: Workspace) -> str:
    task = await add_task(workspace, "Where do grey herons nest?", TaskStatus.NEEDS_REVIEW)
    other = await add_task(workspace, "Where do egrets roost?", TaskStatus.NEEDS_REVIEW)
    store = workspace.store
    for t, results in (
        (task, ["Colonies called heronries sit in tall trees.", "The marsh warden counted ninety nests."]),
        (other, ["Egrets roost in willows."]),
    ):
        attempt = await store.create_attempt(t.id, 1, trigger="initial", prompt=t.text)
        await store.update_attempt(
            attempt.id,
            final_output="They nest in tall trees near water.",
            state="finished",
            packet=packet(t.id, 1, results, "They nest in tall trees near water."),
        )
    return task.id


def test_search_reaches_a_phrase_inside_a_tool_result_and_opens_it(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task_id = await seed(workspace)
        await started(desk)
        panel = desk.search_panel
        assert panel.dock is not None and not panel.dock.isVisible()
        desk.queue.tree.setFocus()
        QTest.keyClick(
            desk.queue.tree,
            Qt.Key.Key_F,
            Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
        )
        assert panel.dock.isVisible()
        panel.query_edit.setText(f'"{PHRASE}"')
        searched = wait_signal(panel.sig_searched)
        QTest.keyClick(panel.query_edit, Qt.Key.Key_Return)
        assert (await searched)[0] == 1
        (hit,) = panel.model.hits
        assert (hit.task_id, hit.kind, hit.ref) == (task_id, DocKind.EVIDENCE, "E2")
        passage = panel.model.index(0, 2).data()
        assert "«marsh warden»" in passage and "ninety nests" in passage
        assert panel.model.index(0, 1).data() == "evidence E2 · attempt 1"
        shown = wait_signal(panel.sig_hit_shown)
        panel.table.activated.emit(panel.model.index(0, 0))
        await shown
        assert desk.queue.selected_task_id == task_id
        evidence = desk.detail.evidence_view
        assert evidence.current_evidence_id() == "E2"
        assert evidence.viewer.selected_text().lower() == PHRASE
        assert evidence.viewer.find_bar.count_label.text() == "1 of 1"

    run(qloop, scenario())


def test_saved_view_round_trip_and_bad_query(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        await seed(workspace)
        await started(desk)
        panel = desk.search_panel
        listed = wait_signal(panel.sig_views_changed)
        panel.open_panel()
        await listed
        assert panel.views_box.count() == 1  # no saved views yet
        panel.query_edit.setText("egrets")
        panel.kind_box.setCurrentIndex(panel.kind_box.findData("evidence"))
        panel.min_score.setValue(0.0)
        changed = wait_signal(panel.sig_views_changed)
        panel.save_current_view("Roosts")
        await changed
        assert [panel.views_box.itemText(i) for i in range(panel.views_box.count())] == [
            "Saved views…",
            "Roosts",
        ]
        panel.query_edit.setText("something else")
        panel.kind_box.setCurrentIndex(0)
        searched = wait_signal(panel.sig_searched)
        panel.views_box.activated.emit(1)
        assert (await searched)[0] == 1
        assert panel.query_edit.text() == "egrets" and panel.kind_box.currentData() == "evidence"
        assert panel.model.hits[0].kind == DocKind.EVIDENCE
        panel.query_edit.setText('"" *')
        panel.run_search()
        await wait_until(lambda: "type a word" in panel.status_label.text(), what="the one-line refusal")

    run(qloop, scenario())


def test_a_hit_inside_an_answer_scrolls_to_and_marks_it(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    """Issue 30, point 8: the answer's match is far below its first screen; opening the hit shows it."""
    word = "kingfisherwatch"
    answer = "\n\n".join(f"Paragraph {n}: " + "herons wade and wait. " * 25 for n in range(40))
    answer += f"\n\nThe last survey was the {word} count."

    async def scenario() -> None:
        task = await add_task(workspace, "Where do kingfishers perch?", TaskStatus.NEEDS_REVIEW)
        attempt = await workspace.store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
        await workspace.store.update_attempt(
            attempt.id, final_output=answer, state="finished", packet=packet(task.id, 1, ["x"], answer)
        )
        await started(desk)
        panel = desk.search_panel
        panel.open_panel()
        panel.query_edit.setText(word)
        searched = wait_signal(panel.sig_searched)
        panel.run_search()
        await searched
        row = next(i for i, h in enumerate(panel.model.hits) if h.kind == DocKind.ANSWER)
        shown = wait_signal(panel.sig_hit_shown)
        panel.table.activated.emit(panel.model.index(row, 0))
        await shown
        pane = desk.detail.answer_pane
        assert pane.marked_text().lower() == word
        assert pane.view.verticalScrollBar().value() > 0
        await desk.ops.wait_idle()

    run(qloop, scenario())
