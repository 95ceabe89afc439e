from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError
from pytestqt.qtbot import QtBot

from core.config import load_settings
from core.domain import TaskStatus
from core.events import EventBus, RunProgress, TaskChange, TaskChanged, TasksChanged
from core.secrets import load_api_keys_into_env
from desktop.app import parse_desk_args
from desktop.bridge import CoreBridge
from desktop.user_config import (
    KeyStoreUnavailable,
    read_user_config,
    save_user_settings,
    store_api_key,
    write_user_config,
)


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


HAND_WRITTEN = """# my desk settings
# the lab's model, agreed 2024-05
agent_model = "openai/gpt-4o"  # not the mini one
db_url = "sqlite+aiosqlite:///shared/workspace.sqlite3"

max_tool_iterations = 5
"""


def test_save_keeps_comments_order_and_keys_it_does_not_edit(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    save_user_settings({"max_tool_iterations": 9, "validator_model": "openai/gpt-4o-mini"}, path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(HAND_WRITTEN.replace("= 5", "= 9"))  # comments, order, db_url kept
    assert text.endswith('validator_model = "openai/gpt-4o-mini"\n')
    assert read_user_config(path)["db_url"] == "sqlite+aiosqlite:///shared/workspace.sqlite3"


def test_writer_keeps_keys_and_tables_the_settings_do_not_know(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# shared with a plug-in\nfuture_option = "x"\n\n[plugin]\nlevel = 3  # loud\n')
    write_user_config({"reviewer": "kim"}, path)
    text = path.read_text(encoding="utf-8")
    assert "# shared with a plug-in" in text and "level = 3  # loud" in text
    assert read_user_config(path) == {"future_option": "x", "reviewer": "kim", "plugin": {"level": 3}}


def test_save_refuses_invalid_settings_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        save_user_settings({"max_tool_iterations": 500, "corpus": str(tmp_path / "missing")}, path)
    assert {err["loc"][0] for err in info.value.errors()} == {"max_tool_iterations", "corpus"}
    assert path.read_text(encoding="utf-8") == HAND_WRITTEN
    assert not (tmp_path / "config.toml.tmp").exists()


def test_save_writes_json_forms_and_none_restores_the_default(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    corpus = tmp_path / "docs"
    corpus.mkdir()
    save_user_settings({"corpus": corpus, "validation_mode": "keywords", "agent_model": "x/y"}, path)
    assert read_user_config(path) == {
        "corpus": str(corpus),
        "validation_mode": "keywords",
        "agent_model": "x/y",
    }
    assert path.read_text(encoding="utf-8").startswith("# Evidence Desk settings")
    save_user_settings({"agent_model": None}, path)
    assert "agent_model" not in read_user_config(path)


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
