"""The Settings dialog's model profiles page: one form per role, local servers detected, a test call.

The form is built from ``ModelProfile.model_fields`` and checked by ``ModelProfile`` itself, so a
new profile field needs no change here. Detection and the test call are core coroutines run on the
loop (never blocking painting); the page only renders what comes back, errors included, verbatim.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from core.config import Settings
from core.errors import EvidenceDeskError
from core.first_run import unconfigured_roles
from core.model_setup import ConnectionReport, LocalServer, detect_local_servers, probe_connection
from core.profiles import ModelProfile, ModelRole, role_model

ROLE_TITLES = {
    ModelRole.AGENT: "Agent",
    ModelRole.VALIDATOR: "Validator",
    ModelRole.PLANNER: "Planner",
    ModelRole.VALIDATOR_FALLBACK: "Validator fallback",
    ModelRole.PLANNER_FALLBACK: "Planner fallback",
    ModelRole.SCHEMA_FALLBACK: "Structured-output fallback",
}


# The form's labels, in the words the rest of the dialog uses: field names made into words read
# "Api base" and "Input cost per mtok". The model's own name is "for this role" because the
# Models tab names a model for each role too: this one, when set, is the one used.
PROFILE_LABELS: dict[str, str] = {
    "model": "Model for this role",
    "api_base": "API base URL",
    "api_key_env": "API key environment variable",
    "api_key_keyring": "API key keyring entry",
    "no_api_key": "No API key needed (local server)",
    "temperature": "Temperature",
    "max_tokens": "Answer length limit (tokens)",
    "context_window": "Context window (tokens)",
    "extra": "Extra litellm parameters (JSON)",
    "input_cost_per_mtok": "Prompt price per million tokens (USD)",
    "output_cost_per_mtok": "Completion price per million tokens (USD)",
}


def profile_label(name: str) -> str:
    """The label of profile field ``name`` (a field added later reads as its words until named here)."""
    return PROFILE_LABELS.get(name) or name.replace("_", " ").capitalize()


class ProfileForm(QWidget):
    """One role's profile: a text field per value (pydantic parses it), a check box per flag."""

    def __init__(self, profile: ModelProfile | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        values = (profile or ModelProfile()).model_dump()
        self.inputs: dict[str, QLineEdit | QCheckBox | QComboBox] = {}
        form = QFormLayout(self)
        for name, field in ModelProfile.model_fields.items():
            value = values.get(name)
            widget: QLineEdit | QCheckBox | QComboBox
            if field.annotation is bool:
                widget = QCheckBox(profile_label(name))
                widget.setChecked(bool(value))
                form.addRow("", widget)
            else:
                if name == "model":
                    widget = QComboBox()
                    widget.setEditable(True)
                    widget.setEditText(value or "")
                    line = widget.lineEdit()
                    if line is not None:
                        line.setPlaceholderText("empty: the model named on the Models tab")
                else:
                    text = (
                        json.dumps(value)
                        if name == "extra" and value
                        else ""
                        if value is None
                        else str(value)
                    )
                    widget = QLineEdit(text if value != {} else "")
                    widget.setPlaceholderText(
                        'JSON, e.g. {"num_ctx": 8192}' if name == "extra" else "(not set)"
                    )
                form.addRow(profile_label(name), widget)
            widget.setToolTip(field.description or "")
            self.inputs[name] = widget

    def raw(self) -> dict[str, Any]:
        """What the form holds, unset values left out (JSON-able, for the settings file)."""
        out: dict[str, Any] = {}
        for name, widget in self.inputs.items():
            if isinstance(widget, QCheckBox):
                if widget.isChecked():
                    out[name] = True
                continue
            text = (widget.currentText() if isinstance(widget, QComboBox) else widget.text()).strip()
            if not text:
                continue
            if name == "extra":
                try:
                    out[name] = json.loads(text)
                except ValueError:
                    out[name] = text  # pydantic names the problem
            else:
                out[name] = text
        return out

    def profile(self) -> ModelProfile:
        """Raises pydantic's ``ValidationError`` naming the bad value."""
        return ModelProfile.model_validate(self.raw())

    def use_local(self, server: LocalServer, model: str) -> None:
        model_box = self.inputs["model"]
        assert isinstance(model_box, QComboBox)
        model_box.setEditText(model)
        base = self.inputs["api_base"]
        assert isinstance(base, QLineEdit)
        base.setText(server.api_base)
        keyless = self.inputs["no_api_key"]
        assert isinstance(keyless, QCheckBox)
        keyless.setChecked(True)
        window = server.context_window(model)
        box = self.inputs.get("context_window")
        if window is not None and isinstance(box, QLineEdit):
            box.setText(str(window))  # what the server says it runs with, not an assumed window

    def offer_models(self, models: list[str]) -> None:
        box = self.inputs["model"]
        assert isinstance(box, QComboBox)
        current = box.currentText()
        box.clear()
        box.addItems(models)
        box.setEditText(current)


class ModelsPage(QWidget):
    sig_status = Signal(str, bool)
    """A message for the dialog's status line: (text, is it an error)."""

    sig_detected = Signal(int)
    """Local detection finished with this many models found."""

    sig_tested = Signal(str, bool)
    """A test call finished: (the model's answer or the exact error, did it fail)."""

    sig_tested_all = Signal(dict)
    """"Test every role" finished: each role's value and what its test found, one line each."""

    def __init__(
        self,
        settings: Settings,
        parent: QWidget | None = None,
        *,
        detect_ports: dict[str, int] | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self.detect_ports = detect_ports
        self._jobs: set[asyncio.Task[Any]] = set()
        self.servers: list[LocalServer] = []

        self.role = QComboBox()
        self.stack = QStackedWidget()
        self.forms: dict[ModelRole, ProfileForm] = {}
        for role in ModelRole:
            self.role.addItem(ROLE_TITLES[role], role.value)
            form = ProfileForm(settings.profiles.get(role))
            self.forms[role] = form
            self.stack.addWidget(form)
        self.role.currentIndexChanged.connect(self.stack.setCurrentIndex)

        self.detect_button = QPushButton("Detect local models")
        self.detect_button.clicked.connect(self.detect)
        self.detected = QListWidget()
        self.detected.setMaximumHeight(120)
        self.use_button = QPushButton("Use for this role")
        self.use_button.clicked.connect(self.use_selected)
        self.detected.itemDoubleClicked.connect(lambda _item: self.use_selected())
        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(self.test_connection)
        self.test_all_button = QPushButton("Test every role")
        self.test_all_button.setToolTip(
            "Call each role's model as typed here and show, per role, what answered (or which "
            "roles the offline replay model stands in for)"
        )
        self.test_all_button.clicked.connect(self.test_all_roles)
        self.role_results: dict[str, str] = {}
        """What "Test every role" found last, by role value."""
        self.test_result = QLabel("")
        self.test_result.setTextFormat(Qt.TextFormat.PlainText)
        self.test_result.setWordWrap(True)
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        for button in (self.detect_button, self.use_button, self.test_button, self.test_all_button):
            button.setAutoDefault(False)

        top = QHBoxLayout()
        top.addWidget(QLabel("Role"))
        top.addWidget(self.role, 1)
        local = QHBoxLayout()
        local.addWidget(self.detect_button)
        local.addWidget(self.use_button)
        local.addStretch(1)
        local.addWidget(self.test_button)
        local.addWidget(self.test_all_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.stack)
        layout.addLayout(local)
        layout.addWidget(self.detected)
        layout.addWidget(self.test_result)
        layout.addStretch(1)

    # ------------------------------------------------------------------ values
    def current_role(self) -> ModelRole:
        return ModelRole(self.role.currentData())

    def select_role(self, role: ModelRole) -> None:
        self.role.setCurrentIndex(self.role.findData(role.value))

    def form(self, role: ModelRole | None = None) -> ProfileForm:
        return self.forms[role or self.current_role()]

    def values(self) -> dict[str, dict[str, Any]]:
        """Every role's profile as typed, unset roles left out (what the settings file gets)."""
        return {role.value: raw for role, form in self.forms.items() if (raw := form.raw())}

    def candidate_settings(self) -> Settings:
        """The dialog's settings with the profiles as typed; raises ``ValidationError``."""
        profiles = {role: form.profile() for role, form in self.forms.items() if form.raw()}
        return self.settings.with_profiles(profiles)

    # ------------------------------------------------------------------ background work
    def _run(
        self,
        coro: Coroutine[Any, Any, Any],
        done: Callable[[Any], None],
        failed: Callable[[BaseException], None],
    ) -> None:
        job = asyncio.get_event_loop().create_task(coro)
        self._jobs.add(job)

        def finished(task: asyncio.Task[Any]) -> None:
            self._jobs.discard(task)
            if task.cancelled():
                return
            exc = task.exception()
            try:
                if exc is not None:
                    failed(exc)
                else:
                    done(task.result())
            except RuntimeError:  # the dialog closed while the job ran
                pass

        job.add_done_callback(finished)

    def cancel_jobs(self) -> None:
        for job in list(self._jobs):
            job.cancel()

    def detect(self) -> None:
        self.detect_button.setEnabled(False)
        self.sig_status.emit("Looking for local model servers on this machine…", False)

        def done(servers: list[LocalServer]) -> None:
            self.detect_button.setEnabled(True)
            self.servers = servers
            self.detected.clear()
            models: list[str] = []
            for server in servers:
                for model in server.models:
                    item = QListWidgetItem(f"{model}    ({server.label} at {server.api_base})")
                    item.setData(Qt.ItemDataRole.UserRole, (server, model))
                    self.detected.addItem(item)
                    models.append(model)
            for form in self.forms.values():
                form.offer_models(models)
            if models:
                self.detected.setCurrentRow(0)
                names = ", ".join(s.label for s in servers)
                self.sig_status.emit(f"Found {len(models)} local model(s) on {names}.", False)
            else:
                self.sig_status.emit(
                    "No local model server answered (Ollama 11434, LM Studio 1234, llama.cpp 8080, vLLM 8000).",
                    False,
                )
            self.sig_detected.emit(len(models))

        def failed(exc: BaseException) -> None:
            self.detect_button.setEnabled(True)
            self.sig_status.emit(f"Detection failed: {exc}", True)
            self.sig_detected.emit(0)

        extra = self.settings.local_server_ports
        self._run(detect_local_servers(ports=self.detect_ports, extra_ports=extra), done, failed)

    def use_selected(self) -> None:
        item = self.detected.currentItem()
        if item is None:
            self.sig_status.emit("Detect local models first, then pick one.", True)
            return
        server, model = item.data(Qt.ItemDataRole.UserRole)
        self.form().use_local(server, model)
        self.sig_status.emit(
            f"{ROLE_TITLES[self.current_role()]} will use {model} at {server.api_base}.", False
        )

    def _candidate_or_say(self) -> Settings | None:
        """The settings as typed, or None after saying why they cannot be tested."""
        try:
            return self.candidate_settings()
        except ValidationError as exc:
            message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            self.test_result.setText(f"Not tested: {message}")
            self.sig_tested.emit(message, True)
            return None

    def test_connection(self) -> None:
        role = self.current_role()
        candidate = self._candidate_or_say()
        if candidate is None:
            return
        if role in unconfigured_roles(candidate):
            self.test_result.setText(f"{ROLE_TITLES[role]}: {REPLAYED}")
            self.sig_tested.emit(REPLAYED, False)
            return
        self.test_button.setEnabled(False)
        self.test_result.setText(f"Calling the {ROLE_TITLES[role].lower()} model…")

        def done(report: ConnectionReport) -> None:
            self.test_button.setEnabled(True)
            self.test_result.setText("\n".join(report.lines()))
            self.sig_tested.emit(report.answer, False)

        def failed(exc: BaseException) -> None:
            self.test_button.setEnabled(True)
            self.test_result.setText(f"Failed: {exc}")
            self.sig_tested.emit(str(exc), True)

        self._run(probe_connection(candidate, role), done, failed)

    def test_all_roles(self) -> None:
        """Test each role that has a model of its own; say which ones the replay model answers."""
        candidate = self._candidate_or_say()
        if candidate is None:
            return
        self.test_all_button.setEnabled(False)
        self.test_result.setText("Calling each role's model in turn…")

        def done(results: dict[str, str]) -> None:
            self.test_all_button.setEnabled(True)
            self.role_results = results
            self.test_result.setText(
                "\n".join(f"{ROLE_TITLES[ModelRole(r)]}: {line}" for r, line in results.items())
            )
            self.sig_tested_all.emit(results)

        def failed(exc: BaseException) -> None:
            self.test_all_button.setEnabled(True)
            self.test_result.setText(f"Failed: {exc}")

        self._run(probe_every_role(candidate), done, failed)


REPLAYED = "no model set; the offline replay model stands in (its verdicts send answers to review)"


async def probe_every_role(settings: Settings) -> dict[str, str]:
    """One line per role, in ``ModelRole`` order: what its probe found, the replay model standing
    in, or "not set" for an optional fallback. A role's failure is its line, never the others'."""
    replayed = unconfigured_roles(settings)
    results: dict[str, str] = {}
    for role in ModelRole:
        model = role_model(settings, role)
        if role in replayed:
            results[role.value] = REPLAYED
        elif model is None:
            results[role.value] = "not set (optional)"
        else:
            try:
                report = await probe_connection(settings, role)
                results[role.value] = f"{model}: " + " · ".join(report.lines())
            except EvidenceDeskError as exc:  # the provider's own words (or a missing key), this role's only
                results[role.value] = f"{model}: failed: {exc}"
    return results


__all__ = ["ModelsPage", "ProfileForm"]
