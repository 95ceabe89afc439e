"""The Settings dialog is built from ``Settings``: its bounds, fields and checks are the model's."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QDialog, QDoubleSpinBox, QLineEdit, QSpinBox
from pytestqt.qtbot import QtBot

from core.config import Settings, editable_settings, load_settings
from desktop.dialogs.settings import SettingsDialog
from desktop.user_config import read_user_config


def _dialog(qtbot: QtBot, settings: Settings, path: Path) -> SettingsDialog:
    dialog = SettingsDialog(settings, config_path=path)
    qtbot.addWidget(dialog)
    with qtbot.waitActive(dialog):
        dialog.show()
        dialog.activateWindow()
    return dialog


def _bounds(name: str, model: type[Settings] = Settings) -> dict[str, float]:
    found: dict[str, float] = {}
    for rule in model.model_fields[name].metadata:
        found.update({k: getattr(rule, k) for k in ("ge", "gt", "le", "lt") if hasattr(rule, k)})
    return found


def test_numeric_widgets_take_their_bounds_from_the_fields(qtbot: QtBot, tmp_path: Path) -> None:
    dialog = _dialog(qtbot, load_settings(), tmp_path / "config.toml")
    spin = dialog.field_widget("max_tool_iterations")
    assert isinstance(spin, QSpinBox)
    assert (spin.minimum(), spin.maximum()) == (0, 200) == tuple(_bounds("max_tool_iterations").values())
    checked = 0
    for setting in editable_settings():
        widget = dialog.field_widget(setting.name)
        bounds = _bounds(setting.name)
        if isinstance(widget, QSpinBox) and {"ge", "le"} <= bounds.keys():
            assert (widget.minimum(), widget.maximum()) == (bounds["ge"], bounds["le"]), setting.name
            checked += 1
    assert checked >= 5
    timeout = dialog.field_widget("llm_timeout_s")
    assert isinstance(timeout, QDoubleSpinBox)
    assert timeout.maximum() == _bounds("llm_timeout_s")["le"]
    assert timeout.minimum() > _bounds("llm_timeout_s")["gt"]  # gt=0: the smallest step above it
    context = dialog.field_widget("validator_context_tokens")
    assert isinstance(context, QSpinBox) and context.minimum() == 256 and not context.isEnabled()


def test_labels_and_help_come_from_the_field_metadata(qtbot: QtBot, tmp_path: Path) -> None:
    dialog = _dialog(qtbot, load_settings(), tmp_path / "config.toml")
    field = Settings.model_fields["max_parallel_team_nodes"]
    assert dialog.field_widget("max_parallel_team_nodes").toolTip() == field.description
    assert [dialog.tabs.tabText(i) for i in range(dialog.tabs.count())] == [
        "Models",
        "Model profiles",
        "Limits",
        "Review",
        "Evidence",
        "Debugging",
        "API keys",
    ]
    assert isinstance(dialog.field_widget("validation_mode"), QComboBox)
    assert isinstance(dialog.field_widget("fetch_url_enabled"), QCheckBox)
    assert isinstance(dialog.field_widget("script"), QLineEdit)  # a replay script can be chosen here
    for hidden in ("db_url",):
        with pytest.raises(KeyError):
            dialog.field_widget(hidden)


class WithExtras(Settings):
    """A settings model with fields the dialog has never heard of."""

    accent: str = Field(default="teal", max_length=8, title="Accent colour", description="Highlights.")
    batch_size: int = Field(default=4, ge=2, le=9)


def test_a_new_setting_appears_without_touching_the_dialog(qtbot: QtBot, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    dialog = _dialog(qtbot, WithExtras(), path)
    batch = dialog.field_widget("batch_size")
    assert isinstance(batch, QSpinBox) and (batch.minimum(), batch.maximum(), batch.value()) == (2, 9, 4)
    assert dialog.tabs.tabText(dialog.tabs.count() - 2) == "Other"
    accent = dialog.field_widget("accent")
    assert isinstance(accent, QLineEdit) and accent.toolTip() == "Highlights."
    accent.setText("plum")
    batch.setValue(7)
    qtbot.keyClick(accent, Qt.Key.Key_Return)
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert read_user_config(path) == {"accent": "plum", "batch_size": 7}


def test_invalid_value_is_refused_naming_the_field_and_nothing_is_written(
    qtbot: QtBot, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    dialog = _dialog(qtbot, WithExtras(), path)
    accent = dialog.field_widget("accent")
    assert isinstance(accent, QLineEdit)
    accent.setText("ultramarine")  # longer than the model's max_length
    corpus = dialog.field_widget("corpus")
    assert isinstance(corpus, QLineEdit)
    corpus.setText(str(tmp_path / "<b>no such</b>"))
    qtbot.keyClick(dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.isVisible() and dialog.result() != QDialog.DialogCode.Accepted
    assert not path.exists()
    assert "at most 8 characters" in dialog.error_text("accent")
    assert dialog.error_text("corpus") == f"no such folder: {tmp_path / '<b>no such</b>'}"
    assert dialog.error_text("agent_model") == ""
    status = dialog.status_label.text()
    assert status.startswith("Not saved.")
    assert "Corpus folder (corpus): no such folder" in status and "Accent colour (accent)" in status
    assert dialog.status_label.textFormat() == Qt.TextFormat.PlainText  # the path is shown as typed
    assert dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Evidence", "the first refusal is shown"
    assert dialog.focusWidget() is corpus

    corpus.setText(str(tmp_path))
    accent.setText("plum")
    qtbot.keyClick(corpus, Qt.Key.Key_Return)
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert read_user_config(path) == {"accent": "plum", "corpus": str(tmp_path)}


HAND_WRITTEN = """# my desk settings
agent_model = "openai/gpt-4o"  # the lab's choice
db_url = "sqlite+aiosqlite:///{db}"
reviewer = "kim"

# keep the loop short
max_tool_iterations = 5
"""


def test_a_commented_file_round_trips_through_save(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.toml"
    original = HAND_WRITTEN.format(db=tmp_path / "ws.sqlite3")
    path.write_text(original, encoding="utf-8")
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(path))
    settings = load_settings()
    assert settings.max_tool_iterations == 5 and settings.reviewer == "kim"
    dialog = _dialog(qtbot, settings, path)
    spin = dialog.field_widget("max_tool_iterations")
    assert isinstance(spin, QSpinBox)
    spin.setValue(9)
    reviewer = dialog.field_widget("reviewer")
    assert isinstance(reviewer, QLineEdit)
    reviewer.clear()  # empty: back to the default (the login name)
    qtbot.keyClick(dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.result() == QDialog.DialogCode.Accepted
    expected = original.replace('reviewer = "kim"\n', "").replace("= 5", "= 9")
    assert path.read_text(encoding="utf-8") == expected, "comments, order and db_url kept; nothing else added"
    assert load_settings().max_tool_iterations == 9


def test_escape_cancels_and_writes_nothing(qtbot: QtBot, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    dialog = _dialog(qtbot, load_settings(), path)
    spin = dialog.field_widget("max_tool_iterations")
    assert isinstance(spin, QSpinBox)
    spin.setValue(3)
    qtbot.keyClick(spin, Qt.Key.Key_Escape)
    assert dialog.result() == QDialog.DialogCode.Rejected and not dialog.isVisible()
    assert not path.exists()


def test_save_without_changes_leaves_the_file_alone(qtbot: QtBot, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    dialog = _dialog(qtbot, load_settings(), path)
    qtbot.keyClick(dialog.field_widget("agent_model"), Qt.Key.Key_Enter)
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert not path.exists(), "nothing changed, so defaults are not pinned into a file"


def test_tab_walks_the_fields_in_order(qtbot: QtBot, tmp_path: Path) -> None:
    dialog = _dialog(qtbot, load_settings(), tmp_path / "config.toml")
    names = [s.name for s in editable_settings() if s.group == "Models"]
    first = dialog.field_widget(names[0])
    first.setFocus()
    seen = [first]
    for _ in names[1:]:
        qtbot.keyClick(dialog.focusWidget(), Qt.Key.Key_Tab)
        seen.append(dialog.focusWidget())
    # the optional number is preceded by its "Set" box
    assert seen[:-1] == [dialog.field_widget(n) for n in names[:-1]]
    assert isinstance(seen[-1], QCheckBox) and seen[-1].text() == "Set"


def test_enter_in_the_key_field_stores_the_key_not_the_settings(qtbot: QtBot, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    dialog = _dialog(qtbot, load_settings(), path)
    dialog.tabs.setCurrentIndex(dialog.tabs.count() - 1)
    qtbot.keyClick(dialog.key_value, Qt.Key.Key_Return)
    assert dialog.isVisible() and dialog.status_label.text() == "Paste a key first."
    assert not path.exists()
