"""The New task dialog: what to ask, and whether a team works on it.

The dialog only collects input; ``TaskService.create`` decides whether it is valid (a bad team
file is refused there with a message the desk shows, and the dialog stays open so nothing typed
is lost).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from desktop.dialogs.keys import keyboard_dialog
from desktop.widgets.choose import choose_path
from desktop.widgets.plain import plain_label


@dataclass(frozen=True)
class NewTaskRequest:
    text: str
    title: str | None
    team: str | None  # None, "auto" or a team template path


class NewTaskDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("New task")
        self.resize(620, 420)
        self.text_edit = QPlainTextEdit()
        self.text_edit.setPlaceholderText("What should the agent find out or produce?")
        self.title_edit = QLineEdit(placeholderText="optional; the first line of the task otherwise")
        self.team_none = QRadioButton("Single agent")
        self.team_auto = QRadioButton("Team planned by the planner model")
        self.team_file = QRadioButton("Team template file:")
        self.team_none.setChecked(True)
        group = QButtonGroup(self)
        for b in (self.team_none, self.team_auto, self.team_file):
            group.addButton(b)
        self.team_path = QLineEdit(placeholderText="resources/teams/….toml or .json")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.team_path.textEdited.connect(lambda _t: self.team_file.setChecked(True))
        self.error_label = plain_label(parent=self)  # errors quote file names and task text
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c0392b;")
        self.error_label.hide()

        file_row = QHBoxLayout()
        file_row.addWidget(self.team_file)
        file_row.addWidget(self.team_path, 1)
        file_row.addWidget(browse)
        form = QFormLayout()
        form.addRow("Task", self.text_edit)
        form.addRow("Title", self.title_edit)
        team_box = QVBoxLayout()
        team_box.addWidget(self.team_none)
        team_box.addWidget(self.team_auto)
        team_box.addLayout(file_row)
        form.addRow("Team", team_box)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.create_button = self.buttons.addButton("Create and run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self._try_accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self._shortcuts = keyboard_dialog(self, self._try_accept, self.text_edit)
        self.text_edit.setFocus()
        self.text_edit.setToolTip("Ctrl+Enter creates and runs the task")

    def _browse(self) -> None:
        def chosen(path: str) -> None:
            self.team_path.setText(path)
            self.team_file.setChecked(True)

        self._chooser = choose_path(self, "Team template", chosen, name_filter="Team plans (*.toml *.json)")

    def request(self) -> NewTaskRequest:
        team: str | None = None
        if self.team_auto.isChecked():
            team = "auto"
        elif self.team_file.isChecked():
            team = self.team_path.text().strip() or None
        return NewTaskRequest(
            text=self.text_edit.toPlainText().strip(),
            title=self.title_edit.text().strip() or None,
            team=team,
        )

    def show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.show()

    def _try_accept(self) -> None:
        req = self.request()
        if not req.text:
            self.show_error("Write the task first.")
            return
        if self.team_file.isChecked() and req.team is None:
            self.show_error("Choose a team template file, or pick another team option.")
            return
        self.accept()
