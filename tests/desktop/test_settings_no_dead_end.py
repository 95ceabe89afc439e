"""Issue 30, item 3: Settings never leads to a task that cannot be created.

The path an analyst takes on a fresh desk: Settings → Model profiles (the role shown first is the
agent) → Detect local models (the loopback fake server, found through ``local_server_ports``) →
Use for this role → Test every role → Save → New task. The task runs at once, with no restart: the
agent on the detected server, the offline replay model standing in for the validator. After a
restart the same configuration still runs (it used to stop at "model scripted/validator needs a
script").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from core.config import load_settings
from core.domain import TaskStatus
from core.profiles import ModelProfile, ModelRole
from desktop.app import DeskLauncher
from desktop.dialogs.models_page import probe_every_role
from desktop.dialogs.new_task import NewTaskDialog
from desktop.dialogs.settings import SettingsDialog
from desktop.user_config import read_user_config
from tests.desktop.conftest import run, wait_signal, wait_until
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

ANSWER = "Humpback whales sing for up to twenty hours."


@pytest.fixture
def config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No EVIDENCE_DESK_* or provider variables, and an empty settings file location."""
    for key in list(os.environ):
        if key.startswith("EVIDENCE_DESK_") or key.endswith("_API_BASE") or key == "OPENAI_API_KEY":
            monkeypatch.delenv(key)
    config = tmp_path / "config" / "config.toml"
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(config))
    return config


def _local_model(request: RecordedRequest) -> Reply:
    """A small local server: answers the probes as asked, and any question with ``ANSWER``."""
    body = request.body or {}
    if any(t.get("function", {}).get("name") == "report_ready" for t in body.get("tools") or []):
        return Reply.tools(("report_ready", {"ready": True}))
    if "response_format" in body:
        return Reply.structured({"ready": True})
    return Reply.text("ready" if "single word: ready" in request.text else ANSWER)


async def _new_task(window: object, text: str) -> str:
    window.new_task()  # type: ignore[attr-defined]
    dialog = window.active_dialog  # type: ignore[attr-defined]
    assert isinstance(dialog, NewTaskDialog)
    dialog.text_edit.setPlainText(text)
    dialog.create_button.click()
    queue = window.queue  # type: ignore[attr-defined]
    await wait_until(lambda: queue.selected_task_id is not None, what="the new task")
    return str(queue.selected_task_id)


def test_settings_to_a_running_task_with_no_restart_and_after_one(
    qloop: qasync.QEventLoop,
    qtbot: QtBot,
    sqlite_url: str,
    ui_state: QSettings,
    fake_llm: FakeLLMServer,
    config_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_llm.responder = _local_model
    port = fake_llm.server.port
    monkeypatch.setenv("EVIDENCE_DESK_LOCAL_SERVER_PORTS", f"[{port}]")  # where Detect also looks
    launcher = DeskLauncher(sqlite_url, ui_state=ui_state)

    async def configure_and_run() -> None:
        window = await launcher.open()
        qtbot.addWidget(window)
        window.show()
        assert launcher.first_run and launcher.banner.isVisible()
        assert "Same-family" in window.workspace_status.warning_label.text()  # both scripted at start
        window.open_settings()  # as the menu does
        dialog = window.active_dialog
        assert isinstance(dialog, SettingsDialog)
        assert "apply as soon as you save" in dialog.status_label.text()
        page = dialog.models_page
        detected = wait_signal(page.sig_detected)
        dialog.show_models_page(detect=True)
        await detected
        assert page.current_role() is ModelRole.AGENT  # the role shown first
        rows = [page.detected.item(i).text() for i in range(page.detected.count())]
        ours = next(i for i, text in enumerate(rows) if f"127.0.0.1:{port}" in text)
        page.detected.setCurrentRow(ours)
        page.use_selected()

        tested = wait_signal(page.sig_tested_all)
        page.test_all_button.click()
        (results,) = await tested
        assert results["agent"].startswith("openai/fake-model: The model answered: ready")
        assert "Structured output: json_schema" in results["agent"]
        assert "Tool calls: returned" in results["agent"]
        for role in ("validator", "planner"):
            assert "offline replay model stands in" in results[role], results[role]
        assert results["validator_fallback"] == "not set (optional)"
        assert "Validator: no model set" in page.test_result.text()  # shown per role on the page

        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
        message = window.message_bar.label
        await wait_until(lambda: "applied" in message.text(), what="the settings to apply")
        assert "offline replay model stands in" in message.text() and "validator" in message.text()
        assert "restart" not in message.text()
        assert not launcher.banner.isVisible()  # the agent has a model now
        warning = window.workspace_status.warning_label
        assert "Same-family" not in warning.text()  # scripted/agent and scripted/validator no more

        probes = len(fake_llm.chat_requests())
        task_id = await _new_task(window, "Which whale sings the longest song?")
        model = window.model
        await wait_until(lambda: task_id in model.group_task_ids("needs_review"), what="the task to run")
        store = launcher.services.workspace.store
        attempt = (await store.list_attempts(task_id))[-1]
        assert attempt.final_output == ANSWER  # the detected model answered, no restart between
        task = await store.get_task(task_id)
        assert task.latest_validation_status == "insufficient_evidence"  # the replay judge endorses nothing
        assert len(fake_llm.chat_requests()) == probes + 1
        await launcher.close()

    run(qloop, configure_and_run())
    saved = read_user_config(config_file)
    assert list(saved["profiles"]) == ["agent"]  # only the agent: validator and planner never configured
    assert saved["profiles"]["agent"]["model"] == "openai/fake-model"
    assert saved["profiles"]["agent"]["api_base"] == fake_llm.openai_base

    relaunched = DeskLauncher(sqlite_url, ui_state=ui_state)

    async def after_restart() -> None:
        window = await relaunched.open()
        qtbot.addWidget(window)
        assert not relaunched.first_run and relaunched.banner is None
        task_id = await _new_task(window, "How long is a humpback's song?")
        model = window.model
        await wait_until(lambda: task_id in model.group_task_ids("needs_review"), what="the task to run")
        tasks = await relaunched.services.workspace.store.list_tasks()
        assert TaskStatus.FAILED not in {t.status for t in tasks}
        await relaunched.close()

    run(qloop, after_restart())


def test_every_role_is_tested_on_its_own_and_one_failure_stays_its_own(
    qloop: qasync.QEventLoop, fake_llm: FakeLLMServer, config_file: Path, sqlite_url: str
) -> None:
    """The agent answers; the validator's server is gone: its line says so, the agent's still reads."""
    fake_llm.responder = _local_model
    gone = FakeLLMServer().start()
    dead_base = gone.openai_base
    gone.stop()  # nothing listens there any more
    local = {"no_api_key": True, "model": "openai/fake-model"}
    settings = load_settings(db_url=sqlite_url).with_profiles(
        {
            ModelRole.AGENT: ModelProfile(**local, api_base=fake_llm.openai_base),
            ModelRole.VALIDATOR: ModelProfile(**local, api_base=dead_base),
        }
    )
    results = run(qloop, probe_every_role(settings))
    assert results["agent"].startswith("openai/fake-model: The model answered: ready")
    assert results["validator"].startswith("openai/fake-model: failed:"), results["validator"]
    assert "offline replay model stands in" in results["planner"]
    assert results["schema_fallback"] == "not set (optional)"
