"""Settings, built from ``core.config.Settings``: one widget per editable field, one tab per group.

Labels, help text, groups and numeric bounds all come from the fields' metadata, and a save is
checked by ``Settings`` itself (``save_user_settings``), so a new setting or a changed bound needs
no change here. Only what the analyst changed is written, to the user's settings file, never the
database; it applies at the next start. API keys go to the OS keyring only.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.config import EditableSetting, Settings, editable_settings, user_config_file
from core.secrets import API_KEY_NAMES
from desktop.dialogs.models_page import ModelsPage
from desktop.user_config import KeyStoreUnavailable, save_user_settings, store_api_key
from desktop.widgets.choose import choose_path

INT_LIMIT = 2**31 - 1  # a QSpinBox holds a C int
FLOAT_LIMIT = 1e9
FLOAT_DECIMALS = 2


@dataclass
class _Editor:
    """The widgets of one setting: ``input`` takes focus, ``read`` gives the value to validate."""

    setting: EditableSetting
    input: QWidget
    row: QWidget
    read: Callable[[], Any]
    error: QLabel
    tab: int


class SettingsDialog(QDialog):
    sig_saved = Signal(list)
    """Saved: the names of the settings that changed (the window applies them at once)."""

    def __init__(
        self,
        settings: Settings,
        parent: QWidget | None = None,
        config_path: Path | None = None,
        *,
        detect_ports: dict[str, int] | None = None,
        applies_now: bool = False,
    ) -> None:
        """``applies_now``: someone applies a save at once (the window does), so say that, not
        "at the next start"."""
        super().__init__(parent)
        self.applies_now = applies_now
        self.setWindowTitle("Settings")
        self.model = type(settings)
        self.config_path = config_path or user_config_file()
        self._key_jobs: set[asyncio.Task[None]] = set()
        self._editors: dict[str, _Editor] = {}
        self._pages: dict[str, QWidget] = {}

        self.tabs = QTabWidget()
        forms: dict[str, QFormLayout] = {}
        for setting in editable_settings(self.model):
            if setting.group not in forms:
                page = QWidget()
                forms[setting.group] = QFormLayout(page)
                self._pages[setting.group] = page
                forms[setting.group].setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
                self.tabs.addTab(page, setting.group)
            editor = _editor(setting, getattr(settings, setting.name), tab=self.tabs.count() - 1)
            self._editors[setting.name] = editor
            if isinstance(editor.input, QCheckBox):
                forms[setting.group].addRow("", editor.row)
            else:
                label = _plain_label(setting.title)
                label.setBuddy(editor.input)
                label.setToolTip(setting.description)
                forms[setting.group].addRow(label, editor.row)
        self.models_page = ModelsPage(settings, self, detect_ports=detect_ports)
        self.models_page.sig_status.connect(lambda text, error: self._say(text, error=error))
        # Beside the Models tab (the first group), where the flat model names are.
        self.models_tab = self.tabs.insertTab(1, self.models_page, "Model profiles")
        self.tabs.addTab(self._keys_page(), "API keys")

        when = "apply as soon as you save" if applies_now else "apply at the next start"
        self.status_label = _plain_label(f"Settings are saved to {self.config_path} and {when}.")
        self.status_label.setWordWrap(True)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self._save)
        self.buttons.rejected.connect(self.reject)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, self._save)

        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.status_label)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(620)
        # Enter anywhere but the key field saves; set once the button belongs to this dialog.
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setDefault(True)
        self._initial = self.values()

    def _keys_page(self) -> QWidget:
        page = QWidget()
        self.key_name = QComboBox()
        self.key_name.addItems(list(API_KEY_NAMES))
        self.key_value = QLineEdit(placeholderText="paste the key")
        self.key_value.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_value.installEventFilter(self)
        self.key_save = QPushButton("Store in keyring")
        self.key_save.clicked.connect(self._store_key)
        self.key_save.setAutoDefault(False)
        row = QHBoxLayout()
        row.addWidget(self.key_name)
        row.addWidget(self.key_value, 1)
        row.addWidget(self.key_save)
        layout = QVBoxLayout(page)
        layout.addLayout(row)
        layout.addWidget(
            _help_label(
                "Keys go to the OS keyring only, never to the settings file or the workspace, and "
                "apply at once. Enter in the key field stores it."
            )
        )
        layout.addStretch(1)
        return page

    def field_widget(self, name: str) -> QWidget:
        """The input that edits setting ``name`` (a spin box, check box, line edit or combo box)."""
        return self._editors[name].input

    def error_text(self, name: str) -> str:
        """The refusal shown under setting ``name``, or "" when it is fine."""
        error = self._editors[name].error
        return "" if error.isHidden() else error.text()

    def values(self) -> dict[str, Any]:
        """Every editable setting as its widget holds it; ``None`` means "not set"."""
        found = {name: editor.read() for name, editor in self._editors.items()}
        found["profiles"] = self.models_page.values() or None
        return found

    def show_models_page(self, *, detect: bool = False) -> None:
        """Switch to the model profiles (the first run sends the analyst here), detecting local servers."""
        self.tabs.setCurrentIndex(self.models_tab)
        if detect:
            self.models_page.detect()

    def done(self, result: int) -> None:
        """QDialog.done: background detection or test calls end with the dialog."""
        self.models_page.cancel_jobs()
        super().done(result)

    def changes(self) -> dict[str, Any]:
        """Only what the analyst changed: untouched settings stay as the file (or default) has them."""
        initial = self._initial
        return {name: value for name, value in self.values().items() if value != initial[name]}

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """QObject.eventFilter: Enter in the key field stores the key instead of saving settings."""
        if (
            watched is self.key_value
            and isinstance(event, QKeyEvent)
            and event.type() == QEvent.Type.KeyPress
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            and not event.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            self._store_key()
            return True
        return super().eventFilter(watched, event)

    def _save(self) -> None:
        for editor in self._editors.values():
            editor.error.hide()
        try:
            path = save_user_settings(self.changes(), self.config_path, self.model)
        except ValidationError as exc:
            self._show_refusal(exc.errors())
            return
        except (OSError, ValueError) as exc:
            self._say(f"Could not save settings: {exc}", error=True)
            return
        changed = list(self.changes())
        self._say(
            f"Saved to {path}; "
            + ("applying them now." if self.applies_now else "they apply at the next start.")
        )
        self.sig_saved.emit(changed)
        self.accept()

    def _show_refusal(self, errors: list[ErrorDetails]) -> None:
        """Put each pydantic message under the field it names; the status line sums them up."""
        lines: list[str] = []
        first: _Editor | None = None
        for err in errors:
            name = str(err["loc"][0]) if err["loc"] else ""
            message = err["msg"].removeprefix("Value error, ")
            editor = self._editors.get(name)
            if editor is None:  # a key only the file holds, e.g. a typo or a bad db_url
                lines.append(f"{name or 'settings'} in {self.config_path}: {message}")
                continue
            editor.error.setText(message)
            editor.error.show()
            lines.append(f"{editor.setting.title} ({name}): {message}")
            first = first or editor
        self._say("Not saved. " + "; ".join(lines), error=True)
        if first is not None:
            self.tabs.setCurrentWidget(self._pages[first.setting.group])
            first.input.setFocus()

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


def _editor(setting: EditableSetting, value: Any, *, tab: int) -> _Editor:
    """A widget chosen by the field's type; anything unusual gets a text field pydantic parses."""
    kind, optional = _unwrap_optional(setting.field.annotation)
    read: Callable[[], Any]
    widget: QWidget
    row: QWidget
    if kind is bool:
        box = QCheckBox(setting.title)
        box.setChecked(bool(value))
        widget, row, read = box, box, box.isChecked
    elif kind in (int, float):
        spin = _spin(setting.field, is_int=kind is int)
        if optional:
            widget, row, read = _optional_number(spin, value)
        else:
            spin.setValue(value)
            widget, row, read = spin, spin, spin.value
    elif isinstance(kind, type) and issubclass(kind, Enum):
        combo = QComboBox()
        if optional:
            combo.addItem("(not set)", None)
        for member in kind:
            combo.addItem(str(member.value), member.value)
        combo.setCurrentIndex(max(combo.findData(None if value is None else kind(value).value), 0))
        widget, row, read = combo, combo, combo.currentData
    elif get_origin(kind) is list:
        edit = QLineEdit(", ".join(str(v) for v in value or []))
        edit.setPlaceholderText("comma-separated")
        widget, row = edit, edit

        def read() -> Any:
            return [part.strip() for part in edit.text().split(",") if part.strip()]

    else:
        edit = QLineEdit("" if value is None else str(value))
        widget, row = edit, edit
        if kind is Path:
            row = _with_browse(edit, setting.title, folder=setting.path_kind == "folder")

        def read() -> Any:
            return edit.text().strip() or None

    widget.setToolTip(setting.description)
    error = _plain_label("")
    error.setWordWrap(True)
    error.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    error.setStyleSheet("color: #c0392b;")
    error.hide()
    column = QWidget()
    lines = QVBoxLayout(column)
    lines.setContentsMargins(0, 0, 0, 4)
    lines.setSpacing(2)
    lines.addWidget(row)
    if setting.description:
        lines.addWidget(_help_label(setting.description))
    lines.addWidget(error)
    return _Editor(setting=setting, input=widget, row=column, read=read, error=error, tab=tab)


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1 and len(get_args(annotation)) == 2:
            return rest[0], True
    return annotation, False


def _spin(field: FieldInfo, *, is_int: bool) -> QSpinBox | QDoubleSpinBox:
    """A spin box whose range is the field's ``ge``/``gt``/``le``/``lt`` metadata."""
    step = 1 if is_int else 10**-FLOAT_DECIMALS
    limit = INT_LIMIT if is_int else FLOAT_LIMIT
    low, high = -limit, limit
    for rule in field.metadata:
        if getattr(rule, "ge", None) is not None:
            low = rule.ge
        if getattr(rule, "gt", None) is not None:
            low = rule.gt + step
        if getattr(rule, "le", None) is not None:
            high = rule.le
        if getattr(rule, "lt", None) is not None:
            high = rule.lt - step
    if is_int:
        box: QSpinBox | QDoubleSpinBox = QSpinBox()
        box.setRange(int(low), int(high))
    else:
        box = QDoubleSpinBox()
        box.setDecimals(FLOAT_DECIMALS)
        box.setRange(float(low), float(high))
    box.setAccelerated(True)
    return box


def _optional_number(
    spin: QSpinBox | QDoubleSpinBox, value: Any
) -> tuple[QWidget, QWidget, Callable[[], Any]]:
    """A spin box behind a "Set" check box: unchecked means "not set" (``None``)."""
    holder = QWidget()
    row = QHBoxLayout(holder)
    row.setContentsMargins(0, 0, 0, 0)
    enabled = QCheckBox("Set")
    enabled.setChecked(value is not None)
    spin.setEnabled(value is not None)
    if value is not None:
        spin.setValue(value)
    enabled.toggled.connect(spin.setEnabled)
    row.addWidget(enabled)
    row.addWidget(spin, 1)
    QWidget.setTabOrder(enabled, spin)
    return spin, holder, lambda: spin.value() if enabled.isChecked() else None


def _plain_label(text: str) -> QLabel:
    """Paths, names and messages are shown as typed, never interpreted as HTML."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def _help_label(text: str) -> QLabel:
    label = _plain_label(text)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * 0.92)
    label.setFont(font)
    return label


def _with_browse(edit: QLineEdit, title: str, *, folder: bool) -> QWidget:
    holder = QWidget()
    row = QHBoxLayout(holder)
    row.setContentsMargins(0, 0, 0, 0)
    row.addWidget(edit, 1)
    button = QPushButton("Browse…")
    button.setAutoDefault(False)

    def browse() -> None:
        holder.setProperty(
            "chooser", choose_path(holder, title, edit.setText, start=edit.text(), folder=folder)
        )

    button.clicked.connect(browse)
    row.addWidget(button)
    return holder
