"""Readable by default: titles get the room, the workspace is named, messages stay with their task."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QSettings, Qt
from pytestqt.qtbot import QtBot

from core.domain import TaskStatus
from core.workspace import Workspace
from desktop.models.queue_model import COL_TITLE
from desktop.services import DeskServices
from desktop.views.queue.view import TaskRowDelegate
from desktop.views.window.main_window import MainWindow
from tests.desktop.conftest import add_task, run, wait_signal

S = TaskStatus
LONG = "Quarterly tide tables for the northern harbour, with the spring and neap ranges compared"


@pytest.fixture
def window(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, ui_state: QSettings
) -> Iterator[MainWindow]:
    services = DeskServices.for_workspace(workspace)
    win = MainWindow(services, ui_state=ui_state)  # no saved state: the default size and layout
    qtbot.addWidget(win)
    win.show()
    yield win
    run(qloop, services.ops.wait_idle())
    services.bridge.close()


def test_titles_are_readable_at_the_default_window_size(
    qloop: qasync.QEventLoop, workspace: Workspace, window: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, "tides", S.NEEDS_REVIEW, title=LONG)
        refreshed = wait_signal(window.model.sig_refreshed)
        window.start()
        await refreshed
        assert (window.width(), window.height()) == (1400, 860)
        tree = window.queue.tree
        width = tree.header().sectionSize(COL_TITLE)
        chars = width // max(tree.fontMetrics().averageCharWidth(), 1)
        assert width >= 240 and chars >= 30, f"the title column is {width} px ({chars} characters)"
        assert tree.textElideMode() == Qt.TextElideMode.ElideMiddle
        index = window.model.index_of_task(task.id).siblingAtColumn(COL_TITLE)
        delegate = tree.itemDelegateForIndex(index)
        assert isinstance(delegate, TaskRowDelegate)
        assert delegate.tooltip_text(index).startswith(LONG)  # the full title, however narrow

    run(qloop, scenario())


def test_the_status_bar_names_the_workspace_and_keeps_the_path_in_a_tooltip(
    window: MainWindow, workspace: Workspace
) -> None:
    full = workspace.display_name
    status = window.workspace_status
    assert status.workspace_label.text() == f"Workspace: {Path(full).name}"
    assert str(Path(full).parent) not in status.workspace_label.text()
    assert full in status.workspace_label.toolTip()
    assert status.workspace_label.textFormat() == Qt.TextFormat.PlainText


def test_a_configuration_warning_is_said_once_in_the_status_bar(
    window: MainWindow, workspace: Workspace
) -> None:
    warnings = workspace.configuration_warnings()
    label = window.workspace_status.warning_label
    assert label.isVisibleTo(window) == bool(warnings)
    if warnings:  # the scripted agent and validator are one family
        assert label.text() == "⚠ Same-family validator"
        assert "family" in label.toolTip()


def test_an_error_about_a_task_goes_when_another_task_is_selected(
    qloop: qasync.QEventLoop, workspace: Workspace, window: MainWindow
) -> None:
    async def scenario() -> None:
        one = await add_task(workspace, "one", S.NEEDS_REVIEW, title="One")
        two = await add_task(workspace, "two", S.NEEDS_REVIEW, title="Two")
        refreshed = wait_signal(window.model.sig_refreshed)
        window.start()
        await refreshed
        shown = wait_signal(window.sig_dossier_shown)
        assert window.queue.select_task(one.id)
        await shown
        window.show_error(
            "the task changed since it was loaded (version 1, now 2). The task has been reloaded."
        )
        assert window.message_bar.isVisibleTo(window)
        assert window.queue.select_task(two.id)
        assert not window.message_bar.isVisibleTo(window)
        assert window.message_bar.text() == ""

    run(qloop, scenario())


def test_queue_outcome_words_fit_the_column_and_keep_the_full_label() -> None:
    from core.domain.labels import outcome_label
    from core.domain.status import ValidationOutcome, ValidationStatus
    from desktop.presentation import NOT_ENDORSED_COLOUR, outcome_cell

    forced = ValidationOutcome.FORCE_ACCEPTED
    cells = {
        s: outcome_cell(forced, s.value)
        for s in (
            ValidationStatus.REJECTED,
            ValidationStatus.INSUFFICIENT_EVIDENCE,
            ValidationStatus.VALIDATOR_ERROR,
            ValidationStatus.ACCEPTED,
        )
    }
    assert [c.short for c in cells.values()] == ["rejected", "no evidence", "error", "schema unmet"]
    for status, cell in cells.items():
        assert cell.full == outcome_label(forced, status) and cell.colour == NOT_ENDORSED_COLOUR
    assert outcome_cell(ValidationOutcome.ACCEPTED, "accepted").short == "accepted"
    assert outcome_cell(ValidationOutcome.ACCEPTED, "accepted").colour is None
    assert outcome_cell(forced).short == "not endorsed"
    assert outcome_cell(None).short == ""
    every = [outcome_cell(o, s).short for o in ValidationOutcome for s in [None, *ValidationStatus]]
    assert max(len(w) for w in every) <= 12  # the column's width in characters at the default size
