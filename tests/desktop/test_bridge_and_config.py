from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from core.config import load_settings
from core.domain import TaskStatus
from core.events import EventBus, RunProgress, TaskChange, TaskChanged, TasksChanged
from core.secrets import load_api_keys_into_env
from desktop.app import parse_desk_args
from desktop.bridge import CoreBridge
from desktop.user_config import KeyStoreUnavailable, read_user_config, store_api_key, write_user_config


def test_bridge_buffers_until_delivery_then_goes_live(qtbot: QtBot) -> None:
    bus = EventBus()
    bridge = CoreBridge(bus)
    seen: list[object] = []
    bridge.sig_task_changed.connect(seen.append)
    bridge.sig_tasks_changed.connect(seen.append)
    bridge.sig_run_progress.connect(seen.append)
    created = TaskChanged(task_id="t1", change=TaskChange.CREATED, status=TaskStatus.OPEN, version=1)
    running = TaskChanged(task_id="t1", change=TaskChange.STATUS, status=TaskStatus.RUNNING, version=2)
    bus.publish(created)
    bus.publish(running)
    assert seen == [] and bridge.buffered_count == 2
    bridge.start_delivery()
    assert seen == [created, running]
    progress = RunProgress(task_id="t1", attempt=1, phase="llm", iteration=2, tool="search_corpus")
    bus.publish(progress)
    bus.publish(TasksChanged(task_ids=("t1", "t2")))
    assert seen[-2] is progress
    assert seen[-1] == TasksChanged(task_ids=("t1", "t2"))
    bridge.close()
    bus.publish(TaskChanged(task_id="t1", change=TaskChange.STATUS, status=TaskStatus.CLOSED, version=3))
    assert len(seen) == 4


def test_settings_file_round_trips_through_core(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "config.toml"
    path.parent.mkdir()
    path.write_text('reviewer = "kim"\n', encoding="utf-8")
    corpus = tmp_path / "docs"
    corpus.mkdir()
    write_user_config(
        {
            "agent_model": 'openai/gpt-4o "quoted"',
            "max_tool_iterations": 12,
            "llm_timeout_s": 45.5,
            "corpus": str(corpus),
            "debug_full_request_snapshots": True,
            "trigger_keywords": ["tide", "moon"],
            "rules": None,
        },
        path,
    )
    data = read_user_config(path)
    assert data["reviewer"] == "kim"  # keys the dialog does not edit survive
    assert data["agent_model"] == 'openai/gpt-4o "quoted"' and "rules" not in data
    os.environ["EVIDENCE_DESK_CONFIG_FILE"] = str(path)
    try:
        settings = load_settings()
    finally:
        os.environ["EVIDENCE_DESK_CONFIG_FILE"] = "/nonexistent/evidence-desk-test-config.toml"
    assert settings.max_tool_iterations == 12 and settings.llm_timeout_s == 45.5
    assert settings.corpus == corpus and settings.debug_full_request_snapshots is True
    assert settings.trigger_keywords == ["tide", "moon"]
    assert "API_KEY" not in path.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="cannot hold"):
        write_user_config({"agent_model": {"nested": 1}}, path)
    tomllib.loads(path.read_text(encoding="utf-8"))  # a refused write left the file intact


def test_api_key_without_keyring_is_refused_and_stored_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import keyring
    from keyring.backends.fail import Keyring as FailKeyring

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    previous = keyring.get_keyring()
    keyring.set_keyring(FailKeyring())
    try:
        with pytest.raises(KeyStoreUnavailable, match="no OS keyring"):
            store_api_key("OPENAI_API_KEY", "sk-test-123456789")
        assert "OPENAI_API_KEY" not in os.environ
        assert load_api_keys_into_env() == []
    finally:
        keyring.set_keyring(previous)
    assert not any("sk-test" in p.read_text(errors="ignore") for p in tmp_path.rglob("*") if p.is_file())


def test_desk_arguments() -> None:
    assert parse_desk_args([]) is None
    assert parse_desk_args(["--db", "sqlite:///x.db"]) == "sqlite:///x.db"
    assert parse_desk_args(["desk", "--db", "u"]) == "u"
    with pytest.raises(SystemExit):
        parse_desk_args(["--db"])
