"""The desk's first run (no configuration at all) and the model profiles page against a loopback server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import qasync
from PySide6.QtCore import QSettings
from pytest_httpserver import HTTPServer
from pytestqt.qtbot import QtBot
from werkzeug import Request, Response

from core.domain import TaskStatus
from core.first_run import REPLAY_ANSWER
from core.profiles import ModelRole
from desktop import entry
from desktop.app import DeskLauncher, parse_desk_options
from desktop.dialogs.new_task import NewTaskDialog
from desktop.dialogs.settings import SettingsDialog
from desktop.user_config import read_user_config
from desktop.views.window.first_run import FirstRunBanner
from tests.desktop.conftest import run, wait_until

REVIEWABLE = ("needs_review", "awaiting_feedback")


@pytest.fixture(autouse=True)
def _no_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty configuration folder and no EVIDENCE_DESK_* or provider variables."""
    for key in list(os.environ):
        if key.startswith("EVIDENCE_DESK_") or key.endswith("_API_BASE") or key == "OPENAI_API_KEY":
            monkeypatch.delenv(key)
    config = tmp_path / "config" / "config.toml"
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(config))
    return config


def test_the_desk_takes_script_like_the_cli(tmp_path: Path) -> None:
    assert parse_desk_options(["--script", "s.json", "--db", "u"]) == ("u", "s.json")
    assert parse_desk_options(["desk", "--script", "s.json"]) == (None, "s.json")
    with pytest.raises(SystemExit):
        parse_desk_options(["--script"])
    assert entry._only_desk_args(["--script", "s.json"])
    assert not entry._only_desk_args(["run", "x"])


@pytest.mark.empty_workspace  # a new user's first start: no workspace file yet
def test_first_run_new_task_ends_reviewable_through_the_replay_model(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, ui_state: QSettings
) -> None:
    launcher = DeskLauncher(sqlite_url, ui_state=ui_state)

    async def scenario() -> None:
        window = await launcher.open()
        qtbot.addWidget(window)
        window.show()
        assert launcher.first_run
        banner = launcher.banner
        assert isinstance(banner, FirstRunBanner) and banner.isVisible()
        assert "No model provider is configured" in banner.label.text()
        await wait_until(lambda: window.model.loaded_once, what="the queue")

        window.new_task()
        dialog = window.active_dialog
        assert isinstance(dialog, NewTaskDialog)
        dialog.text_edit.setPlainText("Which whale sings the longest song?")
        dialog.create_button.click()
        await wait_until(lambda: window.queue.selected_task_id is not None, what="the new task")
        task_id = window.queue.selected_task_id
        assert task_id is not None
        await wait_until(
            lambda: any(task_id in window.model.group_task_ids(g) for g in REVIEWABLE),
            what="the replayed task to land in review",
        )
        store = launcher.services.workspace.store
        tasks = await store.list_tasks()
        assert [t.status for t in tasks if t.status is TaskStatus.FAILED] == []
        attempts = await store.list_attempts(task_id)
        assert REPLAY_ANSWER in (attempts[-1].final_output or "")
        await launcher.close()

    run(qloop, scenario())


def _local_server(server: HTTPServer) -> list[dict[str, Any]]:
    """An OpenAI-compatible server: a model list, a tool-less answer and a verdict, and a request log."""
    seen: list[dict[str, Any]] = []
    verdict = {
        "goal_achievement": "met",
        "completeness": "complete",
        "rule_compliance": "no rules",
        "status": "accepted",
        "score": 0.9,
        "issues": [],
        "recommended_revision_prompt": "",
        "category": "none",
        "citations": [],
    }

    def chat(request: Request) -> Response:
        body = json.loads(request.get_data())
        seen.append(body)
        judging = "response_format" in body
        content = json.dumps(verdict) if judging else "Whales sing for up to twenty hours."
        answer = {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": body["model"],
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        if body.get("stream"):  # the desk streams agent calls: answer as a server would, in SSE pieces
            chunk = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": body["model"],
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": content}}],
            }
            end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            pieces = [f"data: {json.dumps(chunk)}\n\n", f"data: {json.dumps(end)}\n\n", "data: [DONE]\n\n"]
            return Response(pieces, content_type="text/event-stream")
        return Response(json.dumps(answer), content_type="application/json")

    server.expect_request("/v1/models").respond_with_json(
        {"object": "list", "data": [{"id": "tiny-local", "object": "model"}]}
    )
    server.expect_request("/v1/chat/completions", method="POST").respond_with_handler(chat)
    return seen


def test_settings_detects_a_local_server_tests_it_and_the_desk_runs_a_task_on_it(
    qloop: qasync.QEventLoop,
    qtbot: QtBot,
    sqlite_url: str,
    ui_state: QSettings,
    httpserver: HTTPServer,
    _no_configuration: Path,
) -> None:
    seen = _local_server(httpserver)
    port = httpserver.port
    # Ports nothing listens on for the other kinds, so detection finds only this server.
    ports = {"ollama": 9, "lmstudio": port, "llamacpp": 9, "vllm": 9}
    launcher = DeskLauncher(sqlite_url, ui_state=ui_state)

    async def configure() -> None:
        window = await launcher.open()
        qtbot.addWidget(window)
        settings = launcher.services.workspace.settings
        dialog = SettingsDialog(settings, window, config_path=_no_configuration, detect_ports=ports)
        qtbot.addWidget(dialog)
        dialog.show()
        dialog.show_models_page(detect=True)
        page = dialog.models_page
        await wait_until(lambda: page.detected.count() == 1, what="the detected model")
        assert "openai/tiny-local" in page.detected.item(0).text()
        for role in (ModelRole.AGENT, ModelRole.VALIDATOR):
            page.select_role(role)
            page.use_selected()
        page.select_role(ModelRole.AGENT)
        page.test_connection()
        await wait_until(
            lambda: page.test_result.text().startswith("The model answered"), what="the test call"
        )
        # The answer, then the contract probe (honoured here at json_schema), then the tool probe.
        assert len(seen) == 3 and seen[0]["max_tokens"] == 16
        assert seen[1]["response_format"]["type"] == "json_schema" and seen[2]["tools"]
        assert "Structured output: json_schema" in page.test_result.text()
        assert "Tool calls: none returned" in page.test_result.text()
        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
        await wait_until(lambda: not dialog.isVisible(), what="the dialog to save and close")
        await launcher.close()

    run(qloop, configure())
    saved = read_user_config(_no_configuration)
    assert saved["profiles"]["agent"]["model"] == "openai/tiny-local"
    assert saved["profiles"]["validator"]["no_api_key"] is True

    relaunched = DeskLauncher(sqlite_url, ui_state=ui_state)  # settings apply at the next start

    async def use() -> None:
        window = await relaunched.open()
        qtbot.addWidget(window)
        assert not relaunched.first_run and relaunched.banner is None
        window.new_task()
        dialog = window.active_dialog
        assert isinstance(dialog, NewTaskDialog)
        dialog.text_edit.setPlainText("Which whale sings the longest song?")
        dialog.create_button.click()
        await wait_until(lambda: window.queue.selected_task_id is not None, what="the new task")
        task_id = window.queue.selected_task_id
        assert task_id is not None
        await wait_until(
            lambda: task_id in window.model.group_task_ids("awaiting_feedback"), what="the local run to land"
        )
        await relaunched.close()

    run(qloop, use())
    assert {r["model"] for r in seen} == {"tiny-local"}
    assert any("response_format" in r for r in seen) and any("tools" in r for r in seen)


def test_the_banner_offers_settings_with_local_detection(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, ui_state: QSettings
) -> None:
    launcher = DeskLauncher(sqlite_url, ui_state=ui_state)

    async def scenario() -> None:
        window = await launcher.open()
        qtbot.addWidget(window)
        banner = launcher.banner
        assert isinstance(banner, FirstRunBanner)
        detected: list[int] = []
        banner.settings_button.click()
        dialog = window.active_dialog
        assert isinstance(dialog, SettingsDialog)
        dialog.models_page.sig_detected.connect(detected.append)
        assert dialog.tabs.currentWidget() is dialog.models_page
        await wait_until(lambda: bool(detected), what="local detection to finish")
        dialog.reject()
        banner.replay_button.click()
        assert banner.isHidden()
        await launcher.close()

    run(qloop, scenario())
