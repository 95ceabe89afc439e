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
    # Features installed after the queue's first fill (MainWindow._features).
    "desktop.views.queue.search",
    "desktop.views.team.install",
    "desktop.views.team.pane",
    "desktop.views.queue.bulk",
)

# What the desk's launcher leaves for after the queue's first rows: the LLM gateway and the
# tools (built on first use by the workspace), the keyring, and the optional window features.
NOT_BEFORE_FIRST_FILL = (
    # The ``core.llm`` package itself is light (PEP 562): a first run reads its replay script.
    *(name for name in NOT_AT_START if name != "core.llm"),
    "core.llm.gateway",
    "core.llm.endpoints",
    "core.runtime",
    "core.tools",
    "keyring",
)

LAUNCH = """
import asyncio, json, sys
import qasync
from PySide6.QtCore import QSettings
from desktop.app import DeskLauncher, make_application

app = make_application()
app.setQuitOnLastWindowClosed(False)
loop = qasync.QEventLoop(app)
asyncio.set_event_loop(loop)
seen = {}

async def main():
    launcher = DeskLauncher(sys.argv[1], ui_state=QSettings(sys.argv[2], QSettings.Format.IniFormat))
    window = await launcher.open()

    def filled():  # at the fill itself, before anything deferred had a turn
        if window.model.loaded_once and "fill" not in seen:
            seen["fill"] = sorted(sys.modules)
            seen["features_at_fill"] = hasattr(window, "search_panel")

    window.model.sig_refreshed.connect(filled)
    window.show()
    while window.first_fill.pending or not window.first_fill.filled:
        await asyncio.sleep(0.01)
    await asyncio.to_thread(launcher.keys.wait, 60)
    seen["after"] = sorted(sys.modules)
    seen["features_after"] = [hasattr(window, n) for n in ("search_panel", "team", "bulk")]
    seen["keys_started"] = launcher.keys.started
    window.close()
    await launcher.close()

with loop:
    loop.run_until_complete(main())
print(json.dumps(seen))
"""


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
    loaded = set(_loaded_by("import desktop.views.window.main_window"))
    assert "core.store" in loaded  # the queue's own needs do load: the check itself works
    assert sorted(name for name in NOT_AT_START if name in loaded) == []


@pytest.mark.slow
def test_the_launcher_fills_the_queue_before_loading_the_gateway_keyring_or_features(tmp_path: Path) -> None:
    """Deferred, never dropped: the same modules do load, right after the queue's first rows."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",  # never the user's keyring
    }
    url = f"sqlite+aiosqlite:///{tmp_path / 'workspace.sqlite3'}"
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, url, str(tmp_path / "ui.ini")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    at_fill, after = set(seen["fill"]), set(seen["after"])
    assert "core.store" in at_fill and "desktop.views.queue.view" in at_fill  # the check itself works
    assert sorted(name for name in NOT_BEFORE_FIRST_FILL if name in at_fill) == []
    assert seen["features_at_fill"] is False
    # ... and what waited did run: the features are installed, the keyring was read.
    assert seen["features_after"] == [True, True, True]
    assert seen["keys_started"] is True
    assert {
        "desktop.views.queue.search",
        "desktop.views.team.install",
        "desktop.views.queue.bulk",
        "keyring",
    } <= after


def test_the_workspace_opens_without_the_gateway_or_the_tools() -> None:
    loaded = set(_loaded_by("import core.workspace, core.first_run, core.tasks.recovery"))
    assert "core.store" in loaded
    assert sorted(n for n in ("core.llm.gateway", "core.runtime", "core.tools", "httpx") if n in loaded) == []


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
    from desktop.services import DeskServices
    from desktop.views.window.main_window import MainWindow
    from tests.desktop.conftest import run, wait_until

    services = DeskServices.for_workspace(workspace)
    window = MainWindow(services, ui_state=ui_state)
    qtbot.addWidget(window)
    window.show()
    window.start()
    run(qloop, wait_until(lambda: window.model.loaded_once, what="the queue's first load"))
    # Built on first use (a decision, a run): they load the agent and the LLM gateway.
    assert not services.tasks_started and not services.review_started
