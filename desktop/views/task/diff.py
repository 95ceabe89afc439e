"""The Diff tab: what changed between two attempts of the task shown.

The diff itself is ``core.tasks.diff`` (the same one ``evidence-desk diff`` prints); this view
only picks the pair and paints it. Every piece of answer, issue and evidence text is escaped before
it becomes markup: additions green, removals red and struck through.

A word diff of two long answers takes seconds (4 s at 20,000 words), so it is never computed on the
GUI thread nor for a tab nobody looks at: only when the tab is shown, in a worker thread, and each
pair's diff and page are kept so showing the tab again, or picking a pair back, costs nothing.
"""

from __future__ import annotations

import asyncio
import html
from collections import OrderedDict

import shiboken6
from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTextBrowser, QVBoxLayout, QWidget

from core.tasks.diff import AttemptDiff, diff_attempts
from core.tasks.dossier import TaskDossier

ADDED_STYLE = "background:#dcfce7;color:#14532d"
REMOVED_STYLE = "background:#fee2e2;color:#991b1b;text-decoration:line-through"
CACHED_PAIRS = 8  # a 20,000-word pair's page is a few hundred kB: a handful of pairs, not every task
COMPUTING_NOTE = "Comparing the attempts…"

PairKey = tuple[str, int, int, int]
"""(task id, task version, attempt a, attempt b): a new version of the task may change an attempt."""


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
    if d.no_answer:  # nothing of that attempt to compare: no words deleted, no issues removed
        parts += _no_answer_html(d)
    else:
        parts += _answer_and_verdict_html(d, words)
    if d.no_evidence:
        missing = " ".join(f"Attempt {n} recorded no evidence to compare." for n in d.no_evidence)
        parts.append(f"<h4>Evidence</h4><p>{missing}</p>")
        return "".join(parts)
    parts.append(f"<h4>Evidence ({d.evidence_unchanged} unchanged)</h4><ul>")
    for e in d.evidence:
        ids = f"{e.a_id or '–'} → {e.b_id or '–'}"
        text = f"{e.change}: {e.key} ({ids})"
        parts.append(
            f"<li>{_ins(text) if e.change == 'added' else _del(text) if e.change == 'removed' else html.escape(text)}</li>"
        )
    parts.append("</ul>")
    return "".join(parts)


def _no_answer_html(d: AttemptDiff) -> list[str]:
    """Say which attempt produced no answer and why, instead of a diff against nothing."""
    lines = [
        f"<p><b>Attempt {n} produced no answer:</b> {html.escape(why)}. There is no answer or verdict "
        "of it to compare.</p>"
        for n, why in d.no_answer
    ]
    return ["<h4>Answer and verdict</h4>", *lines]


def _answer_and_verdict_html(d: AttemptDiff, words: str) -> list[str]:
    parts = ["<h4>Answer</h4>", f"<p>{words}</p>", "<h4>Verdict</h4>", "<table cellpadding='3'>"]
    parts.append(f"<tr><th></th><th>Attempt {d.a}</th><th>Attempt {d.b}</th></tr>")
    for f in d.verdict.fields:
        shown_a, shown_b = ("–" if v is None else str(v) for v in (f.a, f.b))  # no verdict, never "None"
        a, b = html.escape(shown_a), html.escape(shown_b)
        if f.changed:
            a, b = _del(shown_a), _ins(shown_b)
        parts.append(f"<tr><td><b>{html.escape(f.name)}</b></td><td>{a}</td><td>{b}</td></tr>")
    parts.append("</table><ul>")
    parts += [f"<li>issue added: {_ins(i)}</li>" for i in d.verdict.issues_added]
    parts += [f"<li>issue removed: {_del(i)}</li>" for i in d.verdict.issues_removed]
    parts += [
        f"<li>citation {html.escape(c.evidence_id)} “{html.escape(c.claim)}”: "
        f"{_del(c.a or 'not cited')} → {_ins(c.b or 'not cited')}</li>"
        for c in d.verdict.citations_changed
    ]
    parts.append("</ul>")
    return parts


def _diff_page(dossier: TaskDossier, a: int, b: int) -> tuple[AttemptDiff, str]:
    """The pair's diff and its page; run in a worker thread (both are seconds for long answers)."""
    diff = diff_attempts(dossier, a, b)
    return diff, diff_html(diff)


class DiffView(QWidget):
    """Two attempt pickers (default: the last two) over the diff of the pair."""

    sig_diff_shown = Signal()
    """The current pair's diff is painted (or its error said): what a test or benchmark awaits."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._dossier: TaskDossier | None = None
        self.diff: AttemptDiff | None = None
        self.computations = 0  # diffs computed; a test counts them (none for a hidden tab)
        self._cache: OrderedDict[PairKey, tuple[AttemptDiff, str]] = OrderedDict()
        self._computing: set[PairKey] = set()
        self._jobs: set[asyncio.Task[None]] = set()
        self._stale = False  # the pair changed while the tab was hidden: compute when it is shown
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

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._stale:
            self._refresh()

    def _pair(self) -> PairKey | None:
        a, b = self.a_combo.currentData(), self.b_combo.currentData()
        if self._dossier is None or a is None or b is None or self.a_combo.count() < 2:
            return None
        task = self._dossier.task
        return (task.id, task.version, int(a), int(b))

    def _refresh(self) -> None:
        self.diff = None
        key = self._pair()
        if key is None:
            self._stale = False
            self._say("A diff needs two attempts.")
            return
        if not self.isVisible():  # the tab is hidden: nobody reads it yet
            self._stale = True
            self._say("")
            return
        self._stale = False
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            self._paint(*hit)
            return
        self._say(COMPUTING_NOTE)
        if key in self._computing:
            return
        assert self._dossier is not None
        self._computing.add(key)
        job = asyncio.get_event_loop().create_task(self._compute(self._dossier, key))
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)

    async def _compute(self, dossier: TaskDossier, key: PairKey) -> None:
        self.computations += 1
        try:
            result = await asyncio.to_thread(_diff_page, dossier, key[2], key[3])
        except ValueError as exc:
            if shiboken6.isValid(self) and self._pair() == key:
                self._say(str(exc))
                self.sig_diff_shown.emit()
            return
        finally:
            self._computing.discard(key)
        if not shiboken6.isValid(self):  # the desk closed while the worker ran
            return
        self._cache[key] = result
        while len(self._cache) > CACHED_PAIRS:
            self._cache.popitem(last=False)
        if self._pair() == key:
            if self.isVisible():
                self._paint(*result)
            else:  # hidden while the worker ran: the cache paints it when the tab is shown again
                self._stale = True

    def _paint(self, diff: AttemptDiff, page: str) -> None:
        self.diff = diff
        self.note.setText("")
        self.browser.setHtml(page)
        self.sig_diff_shown.emit()

    def _say(self, note: str) -> None:
        self.note.setText(note)
        self.browser.clear()


__all__ = ["DiffView", "diff_html"]
