"""Settings precedence (env over TOML over defaults) and start-up errors that name the bad setting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import Field, SecretStr

from core.config import (
    Settings,
    SettingsGroup,
    ValidationMode,
    editable_settings,
    load_settings,
    user_config_file,
)
from core.errors import ConfigurationError, EvidenceDeskError

PREFIX = "EVIDENCE_DESK_"


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Never read the real user's config or a developer's exported EVIDENCE_DESK_* variables."""
    for key in list(os.environ):
        if key.startswith(PREFIX):
            monkeypatch.delenv(key)
    missing = tmp_path / "absent" / "config.toml"
    monkeypatch.setenv(f"{PREFIX}CONFIG_FILE", str(missing))
    return missing


@pytest.fixture
def toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config.toml"
    monkeypatch.setenv(f"{PREFIX}CONFIG_FILE", str(path))
    return path


def test_isolation_points_at_a_missing_file(isolated_env: Path) -> None:
    assert user_config_file() == isolated_env
    assert not isolated_env.exists()


def test_defaults() -> None:
    s = load_settings()
    assert s.max_tool_iterations == 8
    assert s.max_validation_attempts == 2
    assert s.max_parallel_team_nodes == 3
    assert s.debug_full_request_snapshots is False
    assert s.debug_store_validation_prompt is True
    assert s.validation_mode is ValidationMode.ALWAYS
    assert s.trigger_keywords == []
    assert s.script is None
    assert s.db_url.startswith("sqlite+aiosqlite:///")


def test_env_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = tmp_path / "run.json"
    script.write_text("{}")
    monkeypatch.setenv(f"{PREFIX}MAX_TOOL_ITERATIONS", "3")
    monkeypatch.setenv(f"{PREFIX}MAX_PARALLEL_TEAM_NODES", "7")
    monkeypatch.setenv(f"{PREFIX}DEBUG_FULL_REQUEST_SNAPSHOTS", "true")
    monkeypatch.setenv(f"{PREFIX}DEBUG_STORE_VALIDATION_PROMPT", "0")
    monkeypatch.setenv(f"{PREFIX}VALIDATION_MODE", "keywords")
    monkeypatch.setenv(f"{PREFIX}TRIGGER_KEYWORDS", '["revenue", "forecast"]')
    monkeypatch.setenv(f"{PREFIX}SCRIPT", str(script))
    s = load_settings()
    assert s.max_tool_iterations == 3
    assert s.max_parallel_team_nodes == 7
    assert s.debug_full_request_snapshots is True
    assert s.debug_store_validation_prompt is False
    assert s.validation_mode is ValidationMode.KEYWORDS
    assert s.trigger_keywords == ["revenue", "forecast"]
    assert s.script == script


def test_env_prefix_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAX_TOOL_ITERATIONS", "1")
    assert load_settings().max_tool_iterations == 8


def test_toml_file_is_read(toml_file: Path) -> None:
    toml_file.write_text(
        "max_tool_iterations = 5\nmax_validation_attempts = 4\n"
        'agent_model = "openai/gpt-x"\ntrigger_keywords = ["a", "b"]\n'
    )
    s = load_settings()
    assert s.max_tool_iterations == 5
    assert s.max_validation_attempts == 4
    assert s.agent_model == "openai/gpt-x"
    assert s.trigger_keywords == ["a", "b"]
    assert s.max_parallel_team_nodes == 3  # untouched keys keep their defaults


def test_env_wins_over_toml(toml_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml_file.write_text("max_tool_iterations = 5\nmax_validation_attempts = 4\n")
    monkeypatch.setenv(f"{PREFIX}MAX_TOOL_ITERATIONS", "11")
    s = load_settings()
    assert s.max_tool_iterations == 11
    assert s.max_validation_attempts == 4


def test_explicit_overrides_win_and_none_means_unset(
    toml_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml_file.write_text("max_tool_iterations = 5\n")
    monkeypatch.setenv(f"{PREFIX}MAX_TOOL_ITERATIONS", "11")
    assert load_settings(max_tool_iterations=2).max_tool_iterations == 2
    # ``None`` (an unset command-line flag) must not clobber env or file values
    assert load_settings(max_tool_iterations=None).max_tool_iterations == 11


def test_missing_config_file_is_not_an_error() -> None:
    assert load_settings().max_tool_iterations == 8


def _config_error(**overrides: object) -> str:
    with pytest.raises(ConfigurationError) as info:
        load_settings(**overrides)
    assert isinstance(info.value, EvidenceDeskError)
    message = str(info.value)
    assert "\n" not in message, "the command line prints this as one line"
    return message


@pytest.mark.parametrize(
    ("value", "reason"),
    [("-1", "greater than or equal to 0"), ("abc", "valid integer"), ("201", "less than or equal to 200")],
)
def test_invalid_env_value_names_setting_and_reason(
    monkeypatch: pytest.MonkeyPatch, value: str, reason: str
) -> None:
    monkeypatch.setenv(f"{PREFIX}MAX_TOOL_ITERATIONS", value)
    message = _config_error()
    assert "max_tool_iterations" in message
    assert reason in message


def test_script_that_does_not_exist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    monkeypatch.setenv(f"{PREFIX}SCRIPT", str(missing))
    message = _config_error()
    assert "script" in message
    assert f"no such file: {missing}" in message


def test_script_that_is_a_folder(tmp_path: Path) -> None:
    message = _config_error(script=tmp_path)
    assert "script" in message and "no such file" in message


def test_corpus_must_be_a_folder(tmp_path: Path) -> None:
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    message = _config_error(corpus=a_file)
    assert "corpus" in message and "no such folder" in message
    assert load_settings(corpus=tmp_path).corpus == tmp_path


def test_invalid_enum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"{PREFIX}VALIDATION_MODE", "sometimes")
    message = _config_error()
    assert "validation_mode" in message and "'always'" in message


def test_several_bad_settings_are_all_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"{PREFIX}MAX_TOOL_ITERATIONS", "-1")
    monkeypatch.setenv(f"{PREFIX}MAX_PARALLEL_TEAM_NODES", "0")
    message = _config_error()
    assert "max_tool_iterations" in message and "max_parallel_team_nodes" in message


def test_list_setting_that_is_not_json_names_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"{PREFIX}TRIGGER_KEYWORDS", "revenue,forecast")
    message = _config_error()
    assert "trigger_keywords" in message
    assert "JSON" in message
    assert "configuration file" not in message, "an environment problem must not blame the file"


def test_malformed_toml_names_the_file(toml_file: Path) -> None:
    toml_file.write_text("max_tool_iterations = [\n")
    message = _config_error()
    assert str(toml_file) in message
    assert "cannot read configuration file" in message


def test_invalid_value_in_toml(toml_file: Path) -> None:
    toml_file.write_text("max_validation_attempts = 0\n")
    message = _config_error()
    assert "max_validation_attempts" in message and "greater than or equal to 1" in message


def test_unknown_key_in_toml_is_rejected(toml_file: Path) -> None:
    toml_file.write_text("max_tool_iteration = 3\n")  # typo: silently ignoring it would surprise
    message = _config_error()
    assert "max_tool_iteration" in message and "not permitted" in message


def test_unknown_override_is_rejected() -> None:
    message = _config_error(max_tools=3)
    assert "max_tools" in message


def test_settings_class_uses_the_prefix() -> None:
    assert Settings.model_config["env_prefix"] == PREFIX


def test_every_setting_has_a_title_and_a_description() -> None:
    """The dialog's labels and help text come from here; a bare field would show its raw name."""
    for name, field in Settings.model_fields.items():
        assert field.title, name
        assert field.description, name


def test_timeouts_have_an_upper_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"{PREFIX}LLM_TIMEOUT_S", "7200")
    message = _config_error()
    assert "llm_timeout_s" in message and "less than or equal to 3600" in message


def test_editable_settings_leave_out_the_workspace_and_secrets() -> None:
    class WithSecret(Settings):
        service_token: SecretStr | None = None
        colour: str = Field(default="teal")

    names = [s.name for s in editable_settings(WithSecret)]
    assert "db_url" not in names and "profiles" not in names  # profiles have their own page
    assert "script" in names  # Settings offers the replay script (issue #13)
    assert "service_token" not in names
    assert names[-1] == "colour", "a field without desk metadata still appears, last"
    assert editable_settings(WithSecret)[-1].group == SettingsGroup.OTHER
    assert editable_settings(WithSecret)[-1].title == "Colour"
    by_name = {s.name: s for s in editable_settings()}
    assert by_name["corpus"].path_kind == "folder" and by_name["rules"].path_kind == "file"
    assert by_name["max_tool_iterations"].group == SettingsGroup.LIMITS
    groups = [s.group for s in editable_settings()]
    assert groups == sorted(groups, key=[g.value for g in SettingsGroup].index), "grouped in order"
