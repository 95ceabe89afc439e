"""The Validator templates window: the workspace's own validator prompts, edited in the desk.

The list names each validator template and where its text comes from (installed, or the
workspace's version N). The editor holds the selected template's text; under it, the diff of that
text against the installed template, updated as one types, so an edit is read as a change of the
installed prompt, never as a whole new prompt. Saving stores a new version in the workspace
(``core.validation.workspace_templates``: nothing is overwritten, the text is checked as a
template first) and so a new ``validator_version``, shown at the bottom; "Revert to installed"
saves the going-back as a version too. A refused save (a template that does not parse, an
unchanged text) is said in the window and the text stays in the editor.

Keyboard first: the list has the focus; Enter or F2 edits, Ctrl+S saves, Ctrl+Shift+R reverts to
the installed template, Escape goes back to the list (an unsaved edit stays until another
template is chosen, and the window asks before dropping it).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QFontDatabase, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.models.rows_model import RowsModel
from desktop.ops import CoreOps

if TYPE_CHECKING:  # the judge's modules load when the window is first opened, not at the desk's start
    from core.validation.workspace_templates import TemplateState, TemplateVersion
    from desktop.views.host import DeskHost

Load = Callable[[], Coroutine[Any, Any, tuple[list["TemplateState"], str]]]
"""The templates and the workspace's validator version."""
Save = Callable[[str, "str | None", str], Coroutine[Any, Any, tuple["TemplateVersion", str]]]
"""(name, text or None for the installed one, note) -> the saved version and the new validator version."""


def state_label(s: TemplateState) -> str:
    if s.own and s.latest is not None:
        return f"{s.name}  ·  workspace v{s.latest.version}"
    return f"{s.name}  ·  installed"


def _name_cell(row: list[str], column: int, role: int) -> Any:
    return row[0] if role == Qt.ItemDataRole.DisplayRole else None


class TemplatesView(QWidget):
    """The templates, an editor, the diff against the installed text, save and revert."""

    sig_loaded = Signal()
    """The templates are listed (after opening, and after each save)."""
    sig_saved = Signal(str)
    """A version was saved: the workspace's new validator version."""

    def __init__(self, ops: CoreOps, load: Load, save: Save, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Validator templates — the workspace's own prompts")
        self._ops, self._load, self._save = ops, load, save
        self.states: list[TemplateState] = []
        self.current: TemplateState | None = None
        self.validator_version = ""
        self._keep: str | None = None  # the template to show again after a reload
        self.model: RowsModel[list[str]] = RowsModel(["template"], _name_cell, self)
        self.list = QListView(self)
        self.list.setModel(self.model)
        self.list.selectionModel().currentChanged.connect(lambda index, _prev: self.choose(index.row()))
        self.list.activated.connect(lambda _index: self.edit())
        self.editor = QPlainTextEdit(self)
        self.diff = QPlainTextEdit(self)
        self.diff.setReadOnly(True)
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for box in (self.editor, self.diff):
            box.setFont(fixed)
            box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.textChanged.connect(self.update_diff)
        self.note = QLineEdit(self)
        self.note.setPlaceholderText("why (kept with the version)")
        self.save_button = QPushButton("&Save version", self)
        self.save_button.setToolTip("Ctrl+S: store this text as the workspace's new version")
        self.save_button.clicked.connect(lambda: self.save())
        self.revert_button = QPushButton("&Revert to installed", self)
        self.revert_button.setToolTip("Ctrl+Shift+R: the installed template again (saved as a version)")
        self.revert_button.clicked.connect(lambda: self.revert())
        self.status = QLabel("Loading…", self)
        self.status.setWordWrap(True)
        self.version_label = QLabel(self)
        self._lay_out()
        self._shortcuts()

    def _lay_out(self) -> None:
        right = QWidget(self)
        column = QVBoxLayout(right)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(QLabel("Text (Enter or F2 to edit, Esc back to the list):", self))
        column.addWidget(self.editor, 3)
        column.addWidget(QLabel("Against the installed template:", self))
        column.addWidget(self.diff, 2)
        buttons = QHBoxLayout()
        buttons.addWidget(self.note, 1)
        buttons.addWidget(self.save_button)
        buttons.addWidget(self.revert_button)
        column.addLayout(buttons)
        split = QSplitter(self)
        split.addWidget(self.list)
        split.addWidget(right)
        split.setStretchFactor(1, 4)
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)
        layout.addWidget(self.version_label)

    def _shortcuts(self) -> None:
        for keys, slot in (
            (QKeySequence.StandardKey.Save, self.save),
            ("Ctrl+Shift+R", self.revert),
            ("F2", self.edit),
            ("Escape", self.list.setFocus),
        ):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)

    # ------------------------------------------------------------------ loading
    def load(self) -> None:
        self._ops.run(self._load(), what="Reading validator templates", on_done=self.show_states)

    def show_states(self, loaded: tuple[list[TemplateState], str]) -> None:
        states, version = loaded
        chosen = self._keep or (self.current.name if self.current is not None else None)
        self._keep = None
        self.states = states
        self.validator_version = version
        self.version_label.setText(f"Validator version of this workspace: <b>{version}</b>")
        self.model.set_rows([[state_label(s)] for s in states])
        names = [s.name for s in states]
        row = names.index(chosen) if chosen in names else 0
        self.current = None
        if states:
            self.list.setCurrentIndex(self.model.index(row, 0))
            self.choose(row)
        self.list.setFocus()
        self.sig_loaded.emit()

    def choose(self, row: int) -> None:
        """Show the template of ``row``; an unsaved edit of the one shown is confirmed away first."""
        if not 0 <= row < len(self.states) or self.states[row] is self.current:
            return
        if self.dirty and not self._drop_edit():
            if self.current is not None:  # stay on the edited template
                self.list.setCurrentIndex(self.model.index(self.states.index(self.current), 0))
            return
        self.current = self.states[row]
        self.editor.setPlainText(self.current.text)
        self.note.clear()
        self.status.setText(f"{state_label(self.current)}.")

    def _drop_edit(self) -> bool:
        answer = QMessageBox.question(
            self, "Unsaved edit", f"Drop the unsaved edit of {self.current.name if self.current else ''}?"
        )
        return answer == QMessageBox.StandardButton.Yes

    @property
    def dirty(self) -> bool:
        return self.current is not None and self.editor.toPlainText() != self.current.text

    def update_diff(self) -> None:
        from core.validation.workspace_templates import diff_text

        if self.current is None:
            self.diff.clear()
            return
        text = diff_text(self.current.name, self.current.installed, self.editor.toPlainText())
        self.diff.setPlainText(text or "(the same as the installed template)")

    def edit(self) -> None:
        self.editor.setFocus()

    # ------------------------------------------------------------------ saving
    def save(self) -> None:
        if self.current is not None:
            self._store(self.current.name, self.editor.toPlainText())

    def revert(self) -> None:
        if self.current is not None:
            self._store(self.current.name, None)

    def _store(self, name: str, text: str | None) -> None:
        self.save_button.setEnabled(False)
        self.revert_button.setEnabled(False)

        def done(saved: tuple[TemplateVersion, str]) -> None:
            version, validator_version = saved
            self._enable()
            self.status.setText(
                f"{version.name}: saved version {version.version}"
                + (" (back to the installed template)" if version.removed else "")
                + f"; validator version now {validator_version}."
            )
            self.current, self._keep = None, version.name  # reloaded: the saved text is the template's own
            self.sig_saved.emit(validator_version)
            self.load()

        def refused(exc: BaseException) -> bool:
            self._enable()
            self.status.setText(f"Not saved: {exc}")  # the text stays in the editor
            return True

        self._ops.run(
            self._save(name, text, self.note.text().strip()), what=f"Saving {name}", on_done=done,
            on_error=refused,
        )  # fmt: skip

    def _enable(self) -> None:
        self.save_button.setEnabled(True)
        self.revert_button.setEnabled(True)


class TemplatesMenuEntry:
    """Review → Validator templates…: one window per desk, made when first opened."""

    def __init__(self, host: DeskHost) -> None:
        self.host = host
        self.view: TemplatesView | None = None
        self.action = QAction("Validator &templates…", host.widget)
        self.action.setToolTip(
            "The workspace's own validator prompts: edit, diff against the installed, revert"
        )
        self.action.triggered.connect(lambda _checked=False: self.open())
        host.menu("Review").addAction(self.action)

    def open(self) -> TemplatesView:
        view = self.view
        if view is None:
            workspace = self.host.services.workspace
            view = TemplatesView(self.host.ops, *template_sources(workspace, lambda: self.host.reviewer))
            view.setWindowFlag(Qt.WindowType.Window)
            view.setParent(self.host.widget, Qt.WindowType.Window)
            view.resize(1100, 760)
            self.view = view
        view.show()
        view.raise_()
        view.load()
        return view


def template_sources(workspace: Any, reviewer: Callable[[], str]) -> tuple[Load, Save]:
    """The window's two coroutines over a workspace: list the templates, save a version."""
    from core.validation import workspace_templates as wt
    from core.validation.identity import validator_identity

    async def version() -> str:
        return validator_identity(workspace.settings, await wt.workspace_templates(workspace.store)).version

    async def load() -> tuple[list[TemplateState], str]:
        return await wt.template_states(workspace.store), await version()

    async def save(name: str, text: str | None, note: str) -> tuple[TemplateVersion, str]:
        saved = await wt.save_template(workspace.store, name, text, reviewer=reviewer(), note=note)
        return saved, await version()

    return load, save


__all__ = ["TemplatesMenuEntry", "TemplatesView", "state_label", "template_sources"]
