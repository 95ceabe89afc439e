"""The analyst's own verdict on the attempt shown, beside the validator's (which stays as it was).

The override is a fact in the task's log (``core.tasks.override``); this label only reads it from
the dossier the detail pane already holds. Plain text: a note is the analyst's words, not markup.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QWidget,
)

from core.domain.status import ValidationStatus
from core.domain.validation import FailureCategory
from core.tasks.dossier import TaskDossier
from core.tasks.override import dossier_overrides

OVERRIDE_COLOUR = "#6d28d9"


class AnalystVerdictLabel(QLabel):
    """Hidden unless an analyst recorded a verdict on the attempt shown."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self.setStyleSheet(f"color: {OVERRIDE_COLOUR};")
        self.setAccessibleName("Analyst's verdict")
        self.hide()

    def show_for(self, dossier: TaskDossier | None, attempt_index: int | None) -> None:
        found = (
            dossier_overrides(dossier).get(attempt_index) if dossier and attempt_index is not None else None
        )
        if found is None:
            self.setText("")
            self.hide()
            return
        judge = dossier.validation_for(attempt_index) if dossier and attempt_index is not None else None
        kept = (
            f"the validator said {judge.status.replace('_', ' ')}, kept as it was"
            if judge
            else "not validated"
        )
        note = f" — “{found.note}”" if found.note else ""
        self.setText(
            f"Analyst's verdict ({found.reviewer}): {found.status.value.replace('_', ' ')}, "
            f"category {found.category.value.replace('_', ' ')}{note} · {kept}"
        )
        self.show()


class OverrideDialog(QDialog):
    """Status, category and a note: the analyst's verdict on the attempt shown."""

    def __init__(self, attempt_index: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Your verdict on attempt {attempt_index}")
        self.status_combo = QComboBox(self)
        for st in ValidationStatus:
            self.status_combo.addItem(st.value.replace("_", " "), st.value)
        self.category_combo = QComboBox(self)
        for c in FailureCategory:
            self.category_combo.addItem(c.value.replace("_", " "), c.value)
        self.category_combo.setCurrentIndex(self.category_combo.findData(FailureCategory.NONE.value))
        self.note_edit = QPlainTextEdit(self)
        self.note_edit.setPlaceholderText("Why you disagree (kept with your verdict)")
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow(QLabel("The validator's verdict stays as it was; yours is kept beside it.", self))
        form.addRow("Status", self.status_combo)
        form.addRow("Category", self.category_combo)
        form.addRow("Note", self.note_edit)
        form.addRow(buttons)

    def values(self) -> tuple[str, str, str]:
        return (
            self.status_combo.currentData(),
            self.category_combo.currentData(),
            self.note_edit.toPlainText().strip(),
        )


__all__ = ["AnalystVerdictLabel", "OverrideDialog"]
