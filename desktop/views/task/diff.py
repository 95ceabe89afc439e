"""The Diff tab: what changed between two attempts of the task shown.

The diff itself is ``core.tasks.diff`` (the same one ``evidence-desk diff`` prints); this view
only picks the pair and paints it. Every piece of answer, issue and evidence text is escaped before
it becomes markup: additions green, removals red and struck through.
"""

from __future__ import annotations

import html

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTextBrowser, QVBoxLayout, QWidget

from core.tasks.diff import AttemptDiff, diff_attempts
from core.tasks.dossier import TaskDossier

ADDED_STYLE = "background:#dcfce7;color:#14532d"
REMOVED_STYLE = "background:#fee2e2;color:#991b1b;text-decoration:line-through"


def _ins(text: str) -> str:
    return f"<span class='added' style='{ADDED_STYLE}'>{html.escape(text)}</span>"


def _del(text: str) -> str:
    return f"<span class='removed' style='{REMOVED_STYLE}'>{html.escape(text)}</span>"


def diff_html(d: AttemptDiff) -> str:
    """The three views and the revision prompt between them, as escaped HTML."""
    words = " ".join(
        html.escape(c.text) if c.op == "equal" else (_del(c.text) if c.op == "delete" else _ins(c.text))
        for c in d.answer
    )
    parts = [f"<h3>Attempt {d.a} → attempt {d.b}</h3>"]
    if d.revision_prompt:
        parts.append(
            f"<p><b>Revision prompt</b></p><blockquote>{html.escape(d.revision_prompt)}</blockquote>"
        )
    parts += ["<h4>Answer</h4>", f"<p>{words}</p>", "<h4>Verdict</h4>", "<table cellpadding='3'>"]
    parts.append(f"<tr><th></th><th>Attempt {d.a}</th><th>Attempt {d.b}</th></tr>")
    for f in d.verdict.fields:
        a, b = html.escape(str(f.a)), html.escape(str(f.b))
        if f.changed:
            a, b = _del(str(f.a)), _ins(str(f.b))
        parts.append(f"<tr><td><b>{html.escape(f.name)}</b></td><td>{a}</td><td>{b}</td></tr>")
    parts.append("</table><ul>")
    parts += [f"<li>issue added: {_ins(i)}</li>" for i in d.verdict.issues_added]
    parts += [f"<li>issue removed: {_del(i)}</li>" for i in d.verdict.issues_removed]
    parts += [
        f"<li>citation {html.escape(c.evidence_id)} “{html.escape(c.claim)}”: "
        f"{_del(c.a or 'not cited')} → {_ins(c.b or 'not cited')}</li>"
        for c in d.verdict.citations_changed
    ]
    parts.append(f"</ul><h4>Evidence ({d.evidence_unchanged} unchanged)</h4><ul>")
    for e in d.evidence:
        ids = f"{e.a_id or '–'} → {e.b_id or '–'}"
        text = f"{e.change}: {e.key} ({ids})"
        parts.append(
            f"<li>{_ins(text) if e.change == 'added' else _del(text) if e.change == 'removed' else html.escape(text)}</li>"
        )
    parts.append("</ul>")
    return "".join(parts)


class DiffView(QWidget):
    """Two attempt pickers (default: the last two) over the diff of the pair."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._dossier: TaskDossier | None = None
        self.diff: AttemptDiff | None = None
        self.a_combo = QComboBox(self)
        self.b_combo = QComboBox(self)
        self.a_combo.setAccessibleName("Earlier attempt")
        self.b_combo.setAccessibleName("Later attempt")
        self.browser = QTextBrowser(self)
        self.browser.setOpenLinks(False)
        self.note = QLabel(self)
        row = QHBoxLayout()
        row.addWidget(QLabel("Compare", self))
        row.addWidget(self.a_combo)
        row.addWidget(QLabel("with", self))
        row.addWidget(self.b_combo)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.note)
        layout.addWidget(self.browser, 1)
        self.a_combo.currentIndexChanged.connect(self._refresh)
        self.b_combo.currentIndexChanged.connect(self._refresh)

    def set_dossier(self, dossier: TaskDossier | None) -> None:
        """Offer the task's attempts, preselecting the last two."""
        self._dossier = dossier
        indexes = sorted(a.index for a in dossier.attempts) if dossier is not None else []
        for combo, pick in ((self.a_combo, -2), (self.b_combo, -1)):
            combo.blockSignals(True)
            combo.clear()
            for i in indexes:
                combo.addItem(f"Attempt {i}", i)
            if len(indexes) >= 2:
                combo.setCurrentIndex(len(indexes) + pick)
            combo.blockSignals(False)
        self._refresh()

    def select_pair(self, a: int, b: int) -> None:
        self.a_combo.setCurrentIndex(self.a_combo.findData(a))
        self.b_combo.setCurrentIndex(self.b_combo.findData(b))

    def _refresh(self) -> None:
        self.diff = None
        a, b = self.a_combo.currentData(), self.b_combo.currentData()
        if self._dossier is None or a is None or b is None or self.a_combo.count() < 2:
            self.note.setText("A diff needs two attempts.")
            self.browser.clear()
            return
        try:
            self.diff = diff_attempts(self._dossier, int(a), int(b))
        except ValueError as exc:
            self.note.setText(str(exc))
            self.browser.clear()
            return
        self.note.setText("")
        self.browser.setHtml(diff_html(self.diff))


__all__ = ["DiffView", "diff_html"]
