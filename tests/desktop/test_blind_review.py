"""Blind review on the desk: no verdict widget shows the validator's verdict until the analyst's
first judgement; S records that judgement (the task does not move), the verdict is revealed, and
the next S decides."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QStackedWidget,
    QTabBar,
    QTabWidget,
    QTextEdit,
    QTreeView,
    QWidget,
)

from core.calibration import calibrate
from core.config import Settings, load_settings
from core.domain import TaskStatus
from core.domain.facts import EventKind
from core.tasks.dossier import TaskDossier
from core.workspace import Workspace
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import DEFAULT_SCRIPT, add_task, run, select, started, wait_signal
from tests.gates import wait_until

SCORE, ISSUE, RAW = "0.37", "ZEBRA-ISSUE the tide table is misquoted", "RAW-ZEBRA-RESPONSE"


@pytest.fixture
def desk_settings(tmp_path: Path, sqlite_url: str) -> Settings:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"conversations": DEFAULT_SCRIPT}), encoding="utf-8")
    return load_settings(script=script, db_url=sqlite_url, blind_review=True, reviewer="ana")


def _model_texts(view: QAbstractItemView) -> list[str]:
    """Every cell of the view's model in a column the view shows (rows of groups included)."""
    model = view.model()
    if model is None:
        return []
    hidden = view.isColumnHidden if isinstance(view, QTreeView) else (lambda _c: False)
    out: list[str] = []
    parents = [QModelIndex()]
    while parents:
        parent = parents.pop()
        for r in range(model.rowCount(parent)):
            for c in range(model.columnCount(parent)):
                cell = model.index(r, c, parent)
                if not hidden(c):
                    out.append(str(cell.data(Qt.ItemDataRole.DisplayRole) or ""))
                if c == 0 and model.hasChildren(cell):
                    parents.append(cell)
    return out


def _own_texts(w: QWidget) -> list[str]:
    if isinstance(w, QLabel | QAbstractButton | QLineEdit):
        return [w.text()]
    if isinstance(w, QTextEdit | QPlainTextEdit):
        return [w.toPlainText()]
    if isinstance(w, QComboBox):
        return [w.currentText()]
    if isinstance(w, QTabBar):
        return [w.tabText(i) for i in range(w.count()) if w.isTabVisible(i)]
    if isinstance(w, QHeaderView):  # its own words are the column titles, not the cells
        model = w.model()
        return (
            [str(model.headerData(i, w.orientation())) for i in range(w.count()) if not w.isSectionHidden(i)]
            if model
            else []
        )
    if isinstance(w, QAbstractItemView):
        return _model_texts(w)
    return []


def _reachable(child: QWidget) -> bool:
    """Shown, or one click away: the page of a tab whose tab is there to click."""
    if not child.isHidden():
        return True
    stack = child.parentWidget()
    tabs = stack.parentWidget() if isinstance(stack, QStackedWidget) else None
    return (
        isinstance(tabs, QTabWidget) and tabs.indexOf(child) >= 0 and tabs.isTabVisible(tabs.indexOf(child))
    )


def reachable_texts(root: QWidget) -> str:
    """Every text a person could read in ``root`` now or by switching a tab (each line names its widget)."""
    texts = [f"{type(root).__name__}:{root.objectName()}: {t}" for t in _own_texts(root)]
    for child in root.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly):
        if child.isWindow() or not _reachable(child):
            continue
        texts.append(reachable_texts(child))
    return "\n".join(texts)


async def _seed(ws: Workspace) -> str:
    task = await add_task(ws, "When is high tide?", TaskStatus.AWAITING_FEEDBACK)
    store = ws.store
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="When is high tide?")
    await store.update_attempt(
        attempt.id, final_output="At 14:02.", state="finished", validation_status="accepted"
    )
    await store.add_validation(
        task_id=task.id,
        attempt_id=attempt.id,
        attempt_index=1,
        result={"status": "accepted", "score": float(SCORE), "issues": [ISSUE], "category": "none"},
        raw_response=RAW,
        prompt=None,
        debug={"validator_model": "scripted/validator", "warnings": []},
    )
    await store.update_task(task.id, latest_validation_status="accepted", latest_score=float(SCORE))
    return task.id


def test_blind_review_hides_every_verdict_widget_until_the_first_judgement(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task_id = await _seed(workspace)
        await started(desk)
        await select(desk, task_id)
        blind = reachable_texts(desk)
        assert "At 14:02." in blind  # the answer is there to judge
        for needle in (SCORE, "ZEBRA", "accepted", "Accepted"):
            assert needle not in blind, f"{needle!r} is readable before the first judgement"
        assert desk.reviewing.blind is not None and desk.reviewing.blind.banner.isVisibleTo(desk)

        banner = desk.reviewing.blind.banner
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S)  # the blind judgement: the task does not move
        # Not the next dossier shown: a reload the seed's change notices started may land first.
        await wait_until(lambda: not banner.isVisibleTo(desk), what="the verdict to be revealed")
        assert (await workspace.store.get_task(task_id)).status is TaskStatus.AWAITING_FEEDBACK
        judged = await workspace.store.get_task_events(task_id, kinds=[EventKind.ANALYST_JUDGEMENT_RECORDED])
        assert [e.payload["decision"] for e in judged] == ["satisfied"]
        revealed = reachable_texts(desk)
        for needle in (SCORE, ISSUE, RAW):
            assert needle in revealed, f"{needle!r} is not shown after the reveal"

        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S)  # now the decision
        await desk.services.ops.wait_idle()
        assert (await workspace.store.get_task(task_id)).status is TaskStatus.CLOSED
        cal = await calibrate(workspace.store)
        assert cal.anchoring is not None and cal.anchoring.judged == 1 and cal.anchoring.changed.value == 0

    run(qloop, scenario())


def test_a_dossier_read_before_the_one_on_screen_never_replaces_it(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two loads of one task overlap: one read before the blind judgement, delivered late, and the
    # reload after it. Both carry the same task version (a judgement does not move the task), so
    # only the order they were started in tells the stale one; shown, it hid the verdict again.
    async def scenario() -> None:
        task_id = await _seed(workspace)
        await started(desk)
        await select(desk, task_id)
        queue = desk.services.queue
        read_dossier = queue.dossier
        late = asyncio.Event()
        held: list[str] = []

        async def first_read_delivered_late(tid: str) -> TaskDossier:
            dossier = await read_dossier(tid)
            if not held:
                held.append(tid)
                await late.wait()
            return dossier

        monkeypatch.setattr(queue, "dossier", first_read_delivered_late)
        desk.load_detail(task_id)  # reads the blind state now, delivers it after the reveal
        await wait_until(lambda: bool(held), what="the first read to be held")
        banner = desk.reviewing.blind.banner
        desk.queue.tree.setFocus()
        QTest.keyClick(desk.queue.tree, Qt.Key.Key_S)
        await wait_until(lambda: not banner.isVisibleTo(desk), what="the verdict to be revealed")
        late.set()
        await desk.services.ops.wait_idle()
        assert not banner.isVisibleTo(desk)
        assert SCORE in reachable_texts(desk)

    run(qloop, scenario())


def test_blind_review_bands_tasks_awaiting_a_decision_without_telling_the_verdict(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    # Needs review (the validator did not endorse it) against Awaiting feedback (it accepted)
    # would give the verdict away by where a task sits: blind, both wait in one "To judge" group.
    async def scenario() -> None:
        accepted = await _seed(workspace)
        rejected = (await add_task(workspace, "When is low tide?", TaskStatus.NEEDS_REVIEW)).id
        await started(desk)
        model = desk.model
        assert model.looks[0].key == "to_judge"
        assert set(model.group_task_ids("to_judge")) == {accepted, rejected}
        assert model.group_task_ids("needs_review") == model.group_task_ids("awaiting_feedback") == []
        queue = reachable_texts(desk.queue)
        assert "To judge  (2)" in queue
        for needle in ("Needs review", "Awaiting feedback", "Awaiting", "accepted by the validator"):
            assert needle not in queue, f"{needle!r} tells the verdict in the queue"

        # A live change keeps the band: the accepted task moving to needs review stays put.
        updated = wait_signal(model.sig_task_updated)
        await workspace.store.update_task(accepted, status=TaskStatus.NEEDS_REVIEW)
        model.update_task(accepted)
        await updated
        assert set(model.group_task_ids("to_judge")) == {accepted, rejected}

    run(qloop, scenario())
