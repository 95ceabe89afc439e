"""The main window imports only what its first paint shows: a deterministic guard on start-up time.

Start-up time is mostly import time (litellm alone takes seconds, the agent and the LLM gateway
with httpx and detect-secrets most of a second), so the window module must not pull them in;
they load when a run, a dialog or a dossier first needs them. A fresh interpreter is the only
honest place to look: this test process has long imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from core.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]

NOT_AT_START = (
    "litellm",
    "httpx",
    "detect_secrets",
    "core.agent",
    "core.llm",
    "core.tasks.service",
    "core.validation.service",
    "core.bundle.export",
    "desktop.dialogs.new_task",
    "desktop.dialogs.settings",
)


def _loaded_by(statement: str) -> list[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


@pytest.mark.slow
def test_importing_the_main_window_loads_no_agent_gateway_or_dialogs() -> None:
    loaded = set(_loaded_by("import desktop.views.main_window"))
    assert "core.store" in loaded  # the queue's own needs do load: the check itself works
    assert sorted(name for name in NOT_AT_START if name in loaded) == []


def test_pyside_import_check_reads_files_and_answers_as_before() -> None:
    import core.errors
    import desktop.app
    from desktop.app import speed_up_pyside_import_hook

    feature = sys.modules.get("shibokensupport.feature")
    if feature is None or not hasattr(feature, "_mod_uses_pyside"):
        pytest.skip("this PySide6 has no per-import feature check")
    before = feature._mod_uses_pyside
    speed_up_pyside_import_hook()
    speed_up_pyside_import_hook()  # idempotent: wraps once
    after = feature._mod_uses_pyside
    assert getattr(after, "direct_read", False)
    original = before if not getattr(before, "direct_read", False) else None
    for module, uses in ((desktop.app, True), (core.errors, False), (json, False)):
        assert after(module) is uses
        if original is not None:
            assert original(module) is uses


def test_the_window_is_built_and_started_without_the_task_or_review_service(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, ui_state: QSettings
) -> None:
    from desktop.views.main_window import DeskServices, MainWindow
    from tests.desktop.conftest import run, wait_until

    services = DeskServices.for_workspace(workspace)
    window = MainWindow(services, ui_state=ui_state)
    qtbot.addWidget(window)
    window.show()
    window.start()
    run(qloop, wait_until(lambda: window.model.loaded_once, what="the queue's first load"))
    # Built on first use (a decision, a run): they load the agent and the LLM gateway.
    assert not services.tasks_started and not services.review_started
