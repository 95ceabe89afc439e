"""Settings: models, limits, corpus folder, rules file, debug flags and API keys.

What the analyst saves goes to the user's settings file (never the database) and applies at the
next start, when ``core.config`` validates it; API keys go to the OS keyring only.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.config import Settings, user_config_file
from core.secrets import API_KEY_NAMES
from desktop.user_config import KeyStoreUnavailable, store_api_key, write_user_config
from desktop.widgets.choose import choose_path


class SettingsDialog(QDialog):
    def __init__(
        self, settings: Settings, parent: QWidget | None = None, config_path: Path | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.config_path = config_path or user_config_file()
        self._key_jobs: set[asyncio.Task[None]] = set()
        s = settings
        self.agent_model = QLineEdit(s.agent_model)
        self.validator_model = QLineEdit(s.validator_model)
        self.planner_model = QLineEdit(s.planner_model)
        self.max_tool_iterations = _spin(s.max_tool_iterations, 0, 200)
        self.max_validation_attempts = _spin(s.max_validation_attempts, 1, 20)
        self.max_parallel_team_nodes = _spin(s.max_parallel_team_nodes, 1, 64)
        self.llm_timeout_s = _dspin(s.llm_timeout_s)
        self.validator_timeout_s = _dspin(s.validator_timeout_s)
        self.corpus = QLineEdit(str(s.corpus) if s.corpus else "")
        self.rules = QLineEdit(str(s.rules) if s.rules else "")
        self.debug_full_request_snapshots = QCheckBox("Store full LLM requests (large; for debugging)")
        self.debug_full_request_snapshots.setChecked(s.debug_full_request_snapshots)
        self.debug_store_validation_prompt = QCheckBox("Store the validator's prompt with each validation")
        self.debug_store_validation_prompt.setChecked(s.debug_store_validation_prompt)

        models = QFormLayout()
        models.addRow("Agent model", self.agent_model)
        models.addRow("Validator model", self.validator_model)
        models.addRow("Planner model", self.planner_model)
        limits = QFormLayout()
        limits.addRow("Tool iterations per run", self.max_tool_iterations)
        limits.addRow("Validation attempts", self.max_validation_attempts)
        limits.addRow("Parallel team nodes", self.max_parallel_team_nodes)
        limits.addRow("LLM timeout (s)", self.llm_timeout_s)
        limits.addRow("Validator timeout (s)", self.validator_timeout_s)
        files = QFormLayout()
        files.addRow("Corpus folder", _with_browse(self.corpus, folder=True))
        files.addRow("Rules file", _with_browse(self.rules, folder=False))

        self.key_name = QComboBox()
        self.key_name.addItems(list(API_KEY_NAMES))
        self.key_value = QLineEdit(placeholderText="paste the key")
        self.key_value.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_save = QPushButton("Store in keyring")
        self.key_save.clicked.connect(self._store_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_name)
        key_row.addWidget(self.key_value, 1)
        key_row.addWidget(self.key_save)

        self.status_label = QLabel(f"Saved to {self.config_path}; changes apply at the next start.")
        self.status_label.setWordWrap(True)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        for title, inner in [("Models", models), ("Limits", limits), ("Files", files)]:
            box = QGroupBox(title)
            box.setLayout(inner)
            layout.addWidget(box)
        debug = QGroupBox("Debugging")
        dl = QVBoxLayout(debug)
        dl.addWidget(self.debug_full_request_snapshots)
        dl.addWidget(self.debug_store_validation_prompt)
        layout.addWidget(debug)
        keys = QGroupBox("API keys (OS keyring only)")
        keys.setLayout(key_row)
        layout.addWidget(keys)
        layout.addWidget(self.status_label)
        layout.addWidget(buttons)

    def values(self) -> dict[str, Any]:
        return {
            "agent_model": self.agent_model.text().strip() or None,
            "validator_model": self.validator_model.text().strip() or None,
            "planner_model": self.planner_model.text().strip() or None,
            "max_tool_iterations": self.max_tool_iterations.value(),
            "max_validation_attempts": self.max_validation_attempts.value(),
            "max_parallel_team_nodes": self.max_parallel_team_nodes.value(),
            "llm_timeout_s": self.llm_timeout_s.value(),
            "validator_timeout_s": self.validator_timeout_s.value(),
            "corpus": self.corpus.text().strip() or None,
            "rules": self.rules.text().strip() or None,
            "debug_full_request_snapshots": self.debug_full_request_snapshots.isChecked(),
            "debug_store_validation_prompt": self.debug_store_validation_prompt.isChecked(),
        }

    def _save(self) -> None:
        values = self.values()
        for key in ("corpus", "rules"):
            value = values[key]
            if value is not None:
                p = Path(value).expanduser()
                ok = p.is_dir() if key == "corpus" else p.is_file()
                if not ok:
                    self._say(f"{key}: no such {'folder' if key == 'corpus' else 'file'}: {p}", error=True)
                    return
        try:
            path = write_user_config(values, self.config_path)
        except (OSError, ValueError) as exc:
            self._say(f"Could not save settings: {exc}", error=True)
            return
        self._say(f"Saved to {path}; changes apply at the next start.")
        self.accept()

    def _store_key(self) -> None:
        secret = self.key_value.text().strip()
        if not secret:
            self._say("Paste a key first.", error=True)
            return
        name = self.key_name.currentText()
        self._say("Storing the key in the OS keyring…")
        # A keyring may talk to a desktop service: never on the GUI thread.
        job = asyncio.get_event_loop().create_task(asyncio.to_thread(store_api_key, name, secret))
        self._key_jobs.add(job)

        def done(task: asyncio.Task[None]) -> None:
            self._key_jobs.discard(task)
            if task.cancelled():
                return
            exc = task.exception()
            if isinstance(exc, KeyStoreUnavailable):
                self._say(str(exc), error=True)
            elif exc is not None:
                self._say(f"The key was not stored: {exc}", error=True)
            else:
                self.key_value.clear()
                self._say(f"{name} stored in the OS keyring.")

        job.add_done_callback(done)

    def _say(self, message: str, *, error: bool = False) -> None:
        self.status_label.setText(message)
        self.status_label.setStyleSheet("color: #c0392b;" if error else "")


def _spin(value: int, low: int, high: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    return box


def _dspin(value: float) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(0.1, 3600.0)
    box.setDecimals(1)
    box.setValue(value)
    return box


def _with_browse(edit: QLineEdit, *, folder: bool) -> QWidget:
    holder = QWidget()
    row = QHBoxLayout(holder)
    row.setContentsMargins(0, 0, 0, 0)
    row.addWidget(edit, 1)
    button = QPushButton("Browse…")

    def browse() -> None:
        title = "Corpus folder" if folder else "Rules file"
        holder.setProperty(
            "chooser", choose_path(holder, title, edit.setText, start=edit.text(), folder=folder)
        )

    button.clicked.connect(browse)
    row.addWidget(button)
    return holder
