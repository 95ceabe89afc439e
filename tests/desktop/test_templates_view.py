"""The Validator templates window, driven from the keyboard: an edit shows as a diff against the
installed template, Ctrl+S stores a version (a new validator version), a template that does not
parse is refused with the text kept, and Ctrl+Shift+R goes back to the installed template."""

from __future__ import annotations

import os
from pathlib import Path

import qasync
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from core.validation.prompt import validator_template_names
from core.validation.workspace_templates import template_history
from core.workspace import Workspace
from desktop.ops import CoreOps
from desktop.views.insight.templates import TemplatesView, template_sources
from tests.desktop.conftest import run

CTRL = Qt.KeyboardModifier.ControlModifier


def _open(qtbot: QtBot, qloop: qasync.QEventLoop, workspace: Workspace) -> tuple[TemplatesView, CoreOps]:
    ops = CoreOps()
    view = TemplatesView(ops, *template_sources(workspace, lambda: "ana"))
    qtbot.addWidget(view)
    view.resize(1100, 760)
    view.show()
    qtbot.waitExposed(view)
    view.activateWindow()
    view.load()
    run(qloop, ops.wait_idle())
    return view, ops


def _settle(qloop: qasync.QEventLoop, ops: CoreOps) -> None:
    """A save, then the reload it starts."""
    run(qloop, ops.wait_idle())
    run(qloop, ops.wait_idle())


def test_template_editor_saves_diffs_refuses_and_reverts_from_the_keyboard(
    qtbot: QtBot, qloop: qasync.QEventLoop, workspace: Workspace, tmp_path: Path
) -> None:
    view, ops = _open(qtbot, qloop, workspace)
    names = validator_template_names()
    assert [r[0] for r in view.model.rows] == [f"{n}  ·  installed" for n in names]
    installed_version = view.validator_version
    assert view.list.hasFocus() and view.current is not None and view.current.name == names[0]
    assert view.diff.toPlainText() == "(the same as the installed template)"

    qtbot.keyClick(view.list, Qt.Key.Key_Down)  # the second template
    qtbot.keyClick(view.list, Qt.Key.Key_F2)
    assert view.current.name == names[1] and view.editor.hasFocus()
    view.editor.moveCursor(view.editor.textCursor().MoveOperation.End)
    qtbot.keyClick(view.editor, Qt.Key.Key_Return)
    qtbot.keyClicks(view.editor, "Cite the evidence id of every claim.")
    qtbot.keyClick(view.editor, Qt.Key.Key_Return)
    assert "+Cite the evidence id of every claim." in view.diff.toPlainText()
    assert view.dirty
    qtbot.keyClicks(view.note, "stricter citations")
    saved: list[str] = []
    view.sig_saved.connect(saved.append)
    qtbot.keyClick(view.editor, Qt.Key.Key_S, CTRL)
    _settle(qloop, ops)
    assert saved and saved[0] != installed_version == run(qloop, _installed_version(workspace, view))
    assert view.validator_version == saved[0]
    assert view.model.rows[1][0] == f"{names[1]}  ·  workspace v1"
    assert view.current is not None and view.current.name == names[1] and not view.dirty
    history = run(qloop, template_history(workspace.store, names[1]))
    assert [(v.version, v.reviewer, v.note) for v in history] == [(1, "ana", "stricter citations")]
    assert "Cite the evidence id of every claim." in (history[0].source or "")

    shot = os.environ.get("EVIDENCE_DESK_TEST_SHOT_DIR")
    if shot:  # screenshots under xvfb-run: EVIDENCE_DESK_TEST_SHOT_DIR=DIR xvfb-run -a pytest this file
        view.grab().save(str(Path(shot) / "validator-templates.png"))

    qtbot.keyClicks(view.editor, "{% if %}")  # not a template: refused, the text kept
    qtbot.keyClick(view.editor, Qt.Key.Key_S, CTRL)
    _settle(qloop, ops)
    assert view.status.text().startswith("Not saved:") and "not a valid template" in view.status.text()
    assert view.editor.toPlainText().startswith("{% if %}")
    assert len(run(qloop, template_history(workspace.store, names[1]))) == 1

    view.editor.setPlainText(view.current.text)  # the edit undone
    qtbot.keyClick(view.editor, Qt.Key.Key_R, CTRL | Qt.KeyboardModifier.ShiftModifier)
    _settle(qloop, ops)
    assert view.model.rows[1][0] == f"{names[1]}  ·  installed"
    assert view.validator_version == installed_version  # the installed text again: the first version
    assert [v.removed for v in run(qloop, template_history(workspace.store, names[1]))] == [False, True]
    assert view.diff.toPlainText() == "(the same as the installed template)"


async def _installed_version(workspace: Workspace, view: TemplatesView) -> str:
    from core.validation.identity import validator_identity
    from core.validation.prompt import INSTALLED

    return validator_identity(workspace.settings, INSTALLED).version
