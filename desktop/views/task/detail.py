"""The task detail pane: header, final answer, evidence beside the validator's verdict.

Everything the pane shows comes from one :class:`~core.tasks.dossier.TaskDossier`; the pane never
loads data itself, so the shell decides when (and off which thread) a dossier is read.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QLabel,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.domain.event_codec import readable_debug, readable_verdict
from core.domain.evidence import TaskEvidencePacket
from core.domain.facts import WarningCode
from core.domain.records import AttemptRecord, ValidationRecord
from core.domain.status import ValidationOutcome
from core.domain.validation import CitationCheck
from core.tasks.citation_marks import standing_marks
from core.tasks.diff import no_answer_reason
from core.tasks.dossier import TaskDossier
from core.validation.warnings import read_warnings
from desktop.presentation import NOT_ENDORSED_COLOUR, STATUS_LABELS, label, outcome_text
from desktop.views.task.answer import MARKDOWN_NO_HTML, AnswerPane
from desktop.views.task.diff import DiffView
from desktop.views.task.disagreement import DisagreementView, badge_text
from desktop.views.task.evidence import EvidenceView
from desktop.views.task.history import HistoryView, attempt_to_show, failure_notice
from desktop.views.task.live import GATHERING_NOTE, WORKING_NOTE, is_live
from desktop.views.task.override import AnalystVerdictLabel
from desktop.views.task.validator import ValidatorView, warning_title
from desktop.widgets.find_bar import FindBar
from desktop.widgets.fit import ClampedLabel, FlowLayout
from desktop.widgets.plain import plain_label, plain_tooltip

__all__ = ["Badge", "TaskDetailView", "warning_badges"]

# Default proportions (the splitters scale them to the pane): the answer row over the sources row,
# the answer wider than its verdict, the evidence a little wider than the raw response.
BODY_SPLIT = (62, 38)
READING_SPLIT = (62, 38)
SOURCES_SPLIT = (55, 45)
Severity = Literal["info", "warning", "danger"]
BADGE_COLOURS: dict[str, tuple[str, str]] = {  # background, text: explicit so both themes read them
    "info": ("#d6eaf8", "#1b4f72"),
    "warning": ("#fdebd0", "#7e5109"),
    "danger": ("#f5b7b1", "#78281f"),
}
# Codes with a badge of their own below; every other code gets a generic warning badge.
_OWN_BADGES = frozenset(
    {WarningCode.SAME_FAMILY_VALIDATOR, WarningCode.CHUNKED_VALIDATION, WarningCode.UNVERIFIED_CITATIONS}
)


@dataclass(frozen=True)
class Badge:
    text: str
    severity: Severity
    tooltip: str = ""


def warning_badges(
    dossier: TaskDossier,
    attempt: AttemptRecord,
    validation: ValidationRecord | None,
    packet: TaskEvidencePacket | None = None,
) -> list[Badge]:
    """The warnings an analyst must not miss for this attempt, most serious first."""
    badges: list[Badge] = []
    if dossier.attempt_force_accepted(attempt):
        badges.append(Badge("Not endorsed", "danger", "Delivered without the validator's endorsement."))
    if dossier.attempt_interrupted(attempt):
        badges.append(Badge("Interrupted run", "danger", "The process stopped before this attempt finished."))
    if packet is not None and packet.disagreements:
        nodes = sorted({n for d in packet.disagreements for n in d.node_ids})
        badges.append(
            Badge(
                badge_text(len(packet.disagreements)),
                "warning",
                "Team nodes stated different values ("
                + "; ".join(d.subject for d in packet.disagreements)
                + f") between {', '.join(nodes)}. See the Disagreements tab.",
            )
        )
    if packet is not None and _tools_ignored(packet):
        badges.append(
            Badge(
                "Tools ignored",
                "warning",
                "The model was offered tools and a document corpus but called no tool: the answer rests on "
                "no gathered evidence. The server may ignore tools (check its chat template).",
            )
        )
    if validation is None:
        return badges
    debug = readable_debug(validation)  # None for a damaged row: its warnings still read from the raw JSON
    warnings = read_warnings(validation.debug)
    chunked = [w for w in warnings if w.code is WarningCode.CHUNKED_VALIDATION]
    if chunked or (debug is not None and debug.strategy == "chunked"):
        count = debug.chunk_count if debug is not None else 0
        if count <= 0:
            count = next((w.count for w in chunked if w.count), 0)
        badges.append(
            Badge(f"Chunked validation ({count} chunks)", "info", "; ".join(w.message for w in chunked))
        )
    verdict = readable_verdict(validation)
    citations = verdict.citations if verdict is not None else []
    unverified = sum(1 for c in citations if c.check != CitationCheck.VERIFIED)
    flagged = next((w for w in warnings if w.code is WarningCode.UNVERIFIED_CITATIONS), None)
    if unverified or flagged is not None:
        if not unverified and flagged is not None:
            unverified = flagged.count or 0
        badges.append(
            Badge(f"Unverified citations ({unverified})", "warning", flagged.message if flagged else "")
        )
    for w in warnings:
        if w.code not in _OWN_BADGES:
            badges.append(Badge(warning_title(w.code), "warning", w.message))
    return badges


def _tools_ignored(packet: TaskEvidencePacket) -> bool:
    """Whether a run of this attempt was offered tools with a corpus to search and called none."""
    runs = [packet.main_run, *(n.evidence for n in packet.team_node_results)]
    return any(run is not None and run.tools_ignored for run in runs)


def _apply_shares(splitter: QSplitter, shares: tuple[int, ...]) -> None:
    vertical = splitter.orientation() == Qt.Orientation.Vertical
    total = (splitter.height() if vertical else splitter.width()) - splitter.handleWidth() * (
        splitter.count() - 1
    )
    if total > 0:
        splitter.setSizes([total * share // sum(shares) for share in shares])


def _badge_label(badge: Badge, parent: QWidget) -> QLabel:
    background, foreground = BADGE_COLOURS[badge.severity]
    label = plain_label(badge.text, parent)
    label.setObjectName("badge")
    label.setToolTip(plain_tooltip(badge.tooltip))
    font = label.font()
    font.setBold(True)  # set on the widget, not in the style sheet, so the size hint counts it
    label.setFont(font)
    label.setStyleSheet(
        f"QLabel {{ background: {background}; color: {foreground}; border-radius: 8px; padding: 2px 8px; }}"
    )
    label.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    label.setMinimumSize(label.sizeHint())
    return label


class TaskDetailView(QWidget):
    """One task: header with badges, the final answer, then evidence | validator side by side."""

    sig_attempt_changed = Signal(int)
    """Emitted with the attempt number (``AttemptRecord.index``) after the shown attempt changes
    through the selector or :meth:`select_attempt`; not emitted by :meth:`set_dossier`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._dossier: TaskDossier | None = None
        self._shown_task_id: str | None = None  # whose dossier is on screen: find bars reset on a change
        self._attempts: list[AttemptRecord] = []
        self._attempt_index: int | None = None
        self.badges: list[QLabel] = []
        self._live: tuple[str, str] = ("", "")  # (task id, streamed text) while a run streams
        self.verdict_hidden = False  # blind review: see set_verdict_hidden
        self.decision_hidden = False  # a second review: see set_decision_hidden

        self._stack = QStackedWidget(self)
        self.empty_label = QLabel("Select a task", self)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setEnabled(False)
        self._stack.addWidget(self.empty_label)

        page = QWidget(self)
        status_row = self._build_header(page)
        body = self._build_body(page)
        self._lay_out_page(page, status_row, body)
        self._stack.addWidget(page)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self._stack)

    def _build_header(self, page: QWidget) -> FlowLayout:
        """Returns the status row rather than placing it: ``_lay_out_page`` puts it under the task's
        text. Title and text are selectable so an analyst can quote the task; the text is cut to two
        lines (whole in its tooltip) and the row wraps, so neither widens the pane nor eats the
        answer's height."""
        self.title_label = ClampedLabel(1, page)
        font = self.title_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        self.title_label.setFont(font)
        self.title_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.task_text_label = ClampedLabel(2, page)
        self.task_text_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status_label = QLabel(page)
        self.outcome_label = QLabel(page)
        self.usage_label = QLabel(page)
        self.usage_label.setTextFormat(Qt.TextFormat.PlainText)
        self.attempt_combo = QComboBox(page)
        self.attempt_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.attempt_combo.currentIndexChanged.connect(self._on_combo)
        # Status, outcome, attempt, then the badges, then usage: one row that wraps.
        self._badge_row = FlowLayout(spacing=6)
        for widget in (self.status_label, self.outcome_label, self.attempt_combo, self.usage_label):
            self._badge_row.addWidget(widget)
        return self._badge_row

    def _build_body(self, page: QWidget) -> QSplitter:
        """The answer beside its verdict on top, the evidence beside the validator's raw words below.

        The answer under review gets the most room (it is what is judged); each splitter's position
        is the analyst's to move and is kept across tasks and sessions (``splitters``).
        """
        self.answer_pane = AnswerPane(page)
        self.answer_view = self.answer_pane.view
        self.evidence_view = EvidenceView(page)
        self.validator_view = ValidatorView(page)
        self.validator_view.citations.sig_citation_activated.connect(self.show_citation)
        self.reading = QSplitter(Qt.Orientation.Horizontal, page)
        self.reading.addWidget(self.answer_pane)
        self.reading.addWidget(self.validator_view)
        self.reading.setSizes(list(READING_SPLIT))
        self.sources = QSplitter(Qt.Orientation.Horizontal, page)
        self.sources.addWidget(self.evidence_view)
        self.sources.addWidget(self.validator_view.tabs)
        self.sources.setSizes(list(SOURCES_SPLIT))
        body = QSplitter(Qt.Orientation.Vertical, page)
        body.addWidget(self.reading)
        body.addWidget(self.sources)
        body.setSizes(list(BODY_SPLIT))
        self.body = body
        # Until the analyst moves one (or a saved position is restored), each splitter keeps its
        # default proportions at whatever size the pane gets; then Qt keeps where it was left.
        self._proportional: dict[QSplitter, tuple[int, ...]] = {
            body: BODY_SPLIT,
            self.reading: READING_SPLIT,
            self.sources: SOURCES_SPLIT,
        }
        for splitter in self._proportional:
            splitter.setChildrenCollapsible(False)
            for position in range(splitter.count()):
                splitter.setStretchFactor(position, 1)
            splitter.splitterMoved.connect(
                lambda _pos, _index, moved=splitter: self._proportional.pop(moved, None)
            )
            splitter.installEventFilter(self)
        return body

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """QObject.eventFilter: a splitter still at its defaults re-applies its proportions on resize."""
        if event.type() == QEvent.Type.Resize and isinstance(watched, QSplitter):
            shares = self._proportional.get(watched)
            if shares is not None:
                _apply_shares(watched, shares)
        return super().eventFilter(watched, event)

    def keep_positions(self, keys: list[str]) -> None:
        """These splitters were restored from the analyst's saved positions: leave them be."""
        for key in keys:
            self._proportional.pop(self.splitters[key], None)

    @property
    def splitters(self) -> dict[str, QSplitter]:
        """The pane's splitters by the name their positions are saved under."""
        return {"detail/body": self.body, "detail/reading": self.reading, "detail/sources": self.sources}

    def show_citation(self, evidence_id: str, quote: str) -> None:
        """A clicked citation: its quote in the evidence, its claim (or quote) in the answer, both in view."""
        self.evidence_view.show_quote(evidence_id, quote)
        citation = next(
            (
                c
                for c in self.validator_view.citations.citations()
                if c.evidence_id == evidence_id and c.quote == quote
            ),
            None,
        )
        claim = citation.claim if citation is not None else ""
        self.answer_pane.mark(claim, quote, f"[{evidence_id}]")

    def _lay_out_page(self, page: QWidget, status_row: FlowLayout, body: QSplitter) -> None:
        """The header over the tabs; the notices between them stay hidden until a dossier needs them."""
        layout = QVBoxLayout(page)
        layout.setContentsMargins(8, 6, 8, 4)
        layout.setSpacing(4)
        layout.addWidget(self.title_label)
        layout.addWidget(self.task_text_label)
        layout.addLayout(status_row)
        self.failure_label = QLabel(page)  # a failed revision: which answer is back for review
        self.failure_label.setTextFormat(Qt.TextFormat.PlainText)
        self.failure_label.setWordWrap(True)
        self.failure_label.setStyleSheet(f"color: {NOT_ENDORSED_COLOUR};")
        self.failure_label.hide()
        layout.addWidget(self.failure_label)
        self.analyst_verdict_label = AnalystVerdictLabel(page)
        layout.addWidget(self.analyst_verdict_label)
        self.history_view = HistoryView(page)
        self.tabs = QTabWidget(page)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(body, "Answer and evidence")
        self.tabs.addTab(self.history_view, "History")
        self.diff_view = DiffView(page)
        self.tabs.addTab(self.diff_view, "Diff")
        self.disagreement_view = DisagreementView(page)
        self.tabs.addTab(self.disagreement_view, "Disagreements")
        layout.addWidget(self.tabs, 1)

    # ------------------------------------------------------------------ API
    @property
    def dossier(self) -> TaskDossier | None:
        return self._dossier

    @property
    def attempt_index(self) -> int | None:
        """The attempt number shown, or None when there is no attempt."""
        return self._attempt_index

    def set_dossier(self, dossier: TaskDossier | None) -> None:
        """Show ``dossier`` at its latest attempt; None shows the empty state."""
        self._dossier = dossier
        if dossier is None:
            self._attempts = []
            self._attempt_index = None
            self._stack.setCurrentIndex(0)
            return
        task = dossier.task
        if task.id != self._shown_task_id:  # another task: no find bar left open from the last one
            self._shown_task_id = task.id
            for bar in self.findChildren(FindBar):
                bar.reset()
        self.title_label.set_full_text(task.title or task.id)
        text = task.text.strip()
        self.task_text_label.set_full_text(text)
        self.status_label.setText(f"Status: <b>{html.escape(STATUS_LABELS[task.status])}</b>")
        outcome = outcome_text(task.validation_outcome, task.latest_validation_status)
        endorsed = task.validation_outcome is not ValidationOutcome.FORCE_ACCEPTED
        colour = "palette(text)" if endorsed else NOT_ENDORSED_COLOUR
        self.outcome_label.setText(f"Outcome: <b style='color:{colour}'>{html.escape(outcome)}</b>")
        self._attempts = sorted(dossier.attempts, key=lambda a: a.index)
        n = len(self._attempts)
        self.attempt_combo.blockSignals(True)
        self.attempt_combo.clear()
        for k, attempt in enumerate(self._attempts, start=1):
            failed = no_answer_reason(attempt)  # a failed attempt never reads "finished"
            verdict = (
                label(attempt.validation_status or attempt.state)
                if failed is None
                else f"no answer ({failed})"
            )
            self.attempt_combo.addItem(f"Attempt {k} of {n} — {verdict}", attempt.index)
            if failed is not None:
                self.attempt_combo.setItemData(k - 1, f"No answer: {failed}", Qt.ItemDataRole.ToolTipRole)
        self.attempt_combo.setEnabled(n > 1)
        if not n:
            self.attempt_combo.addItem("No attempts yet", -1)
        self.attempt_combo.setCurrentIndex(max(n - 1, 0))
        self.attempt_combo.blockSignals(False)
        self._stack.setCurrentIndex(1)
        self.history_view.set_dossier(dossier)
        self.diff_view.set_dossier(dossier)
        self.failure_label.setText(failure_notice(dossier))
        self.failure_label.setVisible(bool(self.failure_label.text()))
        shown = attempt_to_show(dossier)
        if shown is not None and shown is not self._attempts[-1]:
            self.attempt_combo.blockSignals(True)
            self.attempt_combo.setCurrentIndex(self._attempts.index(shown))
            self.attempt_combo.blockSignals(False)
        self._show(shown)

    def select_attempt(self, index: int) -> None:
        """Show the attempt whose ``AttemptRecord.index`` is ``index``."""
        for position, attempt in enumerate(self._attempts):
            if attempt.index == index:
                self.attempt_combo.setCurrentIndex(position)  # emits through _on_combo when it changes
                return
        known = ", ".join(str(a.index) for a in self._attempts) or "none"
        raise ValueError(f"this task has no attempt {index} (attempts: {known})")

    # ------------------------------------------------------------------ internals
    def _on_combo(self, position: int) -> None:
        if 0 <= position < len(self._attempts):
            attempt = self._attempts[position]
            self._show(attempt)
            self.sig_attempt_changed.emit(attempt.index)

    def _show(self, attempt: AttemptRecord | None) -> None:
        dossier = self._dossier
        assert dossier is not None
        self._attempt_index = attempt.index if attempt is not None else None
        packet = dossier.evidence_packet(attempt.index) if attempt is not None else None
        validation = dossier.validation_for(attempt.index) if attempt is not None else None
        answer = (attempt.final_output if attempt is not None else None) or (
            packet.final_output if packet is not None else ""
        )
        if not answer.strip() and is_live(attempt):
            self.answer_view.setPlainText(self._live_text(dossier.task.id) or WORKING_NOTE)
        else:
            # With no answer, say why: the run's own warnings carry the provider's error, if there was one.
            why = [f"> {w}" for w in (packet.main_run.warnings if packet and packet.main_run else [])]
            # Markdown, but any HTML in it stays text: an answer quotes web pages and models.
            self.answer_view.document().setMarkdown(
                answer if answer.strip() else "\n\n".join(["*No answer was produced.*", *why]),
                MARKDOWN_NO_HTML,
            )
        self.answer_pane.clear_mark()
        if attempt is None:
            self.evidence_view.set_packets([])
        else:  # attempts 1..N, by attempt, rendered by the dossier's loader (in a worker)
            self.evidence_view.set_packets(
                dossier.evidence_packets(attempt.index), dossier.evidence_items(attempt.index)
            )
        if is_live(attempt) and not self.evidence_view.current_evidence_id():
            self.evidence_view.viewer.set_text(GATHERING_NOTE)
        self._show_usage(dossier, attempt)
        self.validator_view.set_validation(validation)
        if validation is not None:  # the analyst's marks on its citations (``citation_marks.py``)
            self.validator_view.citations.set_marks(standing_marks(dossier.events, validation.id))
        self.analyst_verdict_label.show_for(dossier, self._attempt_index)
        self._set_badges(warning_badges(dossier, attempt, validation, packet) if attempt is not None else [])
        self._show_disagreements(packet)
        if self.verdict_hidden:
            self.set_verdict_hidden(True)
        if self.decision_hidden:
            self.set_decision_hidden(True)

    def set_verdict_hidden(self, hidden: bool) -> None:
        """Blind review (``desktop/views/task/blind.py``): hide every widget that shows or hints at
        the validator's verdict (status, outcome, the attempt selector's verdict words, score,
        issues, raw response, warning badges, the analyst's override, history and diff) until the
        analyst's first judgement; revealing shows the attempt again as it is."""
        self.verdict_hidden = hidden
        # the raw response / prompt / debug tabs sit beside the evidence, apart from the verdict view
        verdict_widgets = (self.status_label, self.outcome_label, self.attempt_combo, self.validator_view)
        for widget in (*verdict_widgets, self.validator_view.tabs):
            widget.setVisible(not hidden)
        for tab in (self.history_view, self.diff_view):
            self.tabs.setTabVisible(self.tabs.indexOf(tab), not hidden)
        if hidden:
            for widget in (self.analyst_verdict_label, self.failure_label, *self.badges):
                widget.hide()
            self.tabs.setTabVisible(self.tabs.indexOf(self.disagreement_view), False)
            self.tabs.setCurrentIndex(0)
        elif self._dossier is not None:
            self.failure_label.setVisible(bool(self.failure_label.text()))
            self._show(next((a for a in self._attempts if a.index == self._attempt_index), None))

    def set_decision_hidden(self, hidden: bool) -> None:
        """A second review (``desktop/views/task/second_review.py``): hide what tells the first
        reviewer's decision (the task's status, the history with its notes and reasons, an
        override) until the second reviewer records theirs; revealing shows the attempt as it is."""
        self.decision_hidden = hidden
        self.status_label.setVisible(not hidden)
        self.tabs.setTabVisible(self.tabs.indexOf(self.history_view), not hidden and not self.verdict_hidden)
        if hidden:
            self.analyst_verdict_label.hide()
            if self.tabs.currentWidget() is self.history_view:
                self.tabs.setCurrentIndex(0)
        elif self._dossier is not None and not self.verdict_hidden:
            self._show(next((a for a in self._attempts if a.index == self._attempt_index), None))

    def _show_disagreements(self, packet: TaskEvidencePacket | None) -> None:
        """The tab is there only when the shown attempt's team contradicted itself."""
        marks = packet.disagreements if packet is not None else []
        self.disagreement_view.set_disagreements(marks)
        position = self.tabs.indexOf(self.disagreement_view)
        self.tabs.setTabText(position, f"Disagreements ({len(marks)})")
        self.tabs.setTabVisible(position, bool(marks))

    def show_live_text(self, task_id: str, text: str) -> None:
        """A running task's streamed text (the shell relays it); shown until the attempt has an answer."""
        self._live = (task_id, text)
        attempt = next((a for a in self._attempts if a.index == self._attempt_index), None)
        dossier = self._dossier
        shown = dossier is not None and dossier.task.id == task_id
        if shown and attempt is not None and is_live(attempt) and not (attempt.final_output or "").strip():
            self.answer_view.setPlainText(text or WORKING_NOTE)

    def _live_text(self, task_id: str) -> str:
        return self._live[1] if self._live[0] == task_id else ""

    def _show_usage(self, dossier: TaskDossier, attempt: AttemptRecord | None) -> None:
        task = dossier.usage()
        if attempt is None or len(self._attempts) < 2:
            self.usage_label.setText(f"Usage: {task.summary()}")
        else:
            this = dossier.attempt_usage().get(attempt.index)
            shown = this.summary() if this is not None else "-"
            self.usage_label.setText(f"Usage: task {task.summary()}; this attempt {shown}")
        self.usage_label.setToolTip(f"{task.calls} model calls recorded for this task (agent and validator)")

    def _set_badges(self, badges: list[Badge]) -> None:
        for old in self.badges:
            self._badge_row.removeWidget(old)
            old.deleteLater()
        self.badges = [_badge_label(b, self) for b in badges]
        first = self._badge_row.indexOf(self.usage_label)  # after the attempt, before the usage
        for position, badge in enumerate(self.badges):
            self._badge_row.insertWidget(first + position, badge)

    def badge_texts(self) -> list[str]:
        return [badge.text() for badge in self.badges]
