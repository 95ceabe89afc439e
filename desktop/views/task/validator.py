"""Right half of the task detail: the validator's verdict, its citations and what it actually said."""

from __future__ import annotations

import html
import json
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QPlainTextEdit,
    QTabWidget,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.bundle.redact import redact_text
from core.domain.event_codec import readable_debug, validation_verdict
from core.domain.facts import VerdictWarning, WarningCode
from core.domain.records import ValidationRecord
from core.domain.validation import Citation, CitationCheck, ValidationResult
from core.validation.warnings import read_warnings
from desktop.presentation import VERDICT_COLOURS, label
from desktop.widgets.plain import plain_label, plain_tooltip
from desktop.widgets.text_viewer import JsonHighlighter, TextViewer, monospace_font, pretty_json, wrap_toggle

__all__ = [
    "CitationList",
    "ValidatorView",
    "format_raw_response",
    "raw_differences",
    "warning_line",
    "warning_title",
]

CHECK_TEXT = {
    CitationCheck.VERIFIED: ("✓ verified", "#2e8b57"),
    CitationCheck.QUOTE_NOT_FOUND: ("✗ not found", "#c0392b"),
    CitationCheck.UNKNOWN_ID: ("✗ unknown id", "#c0392b"),
    CitationCheck.UNCHECKED: ("? unchecked", "#d68910"),
}
_HIGHLIGHT_LIMIT = 2_000_000  # characters; beyond this the raw text is shown without colours
# The debug JSON is laid out this much at a time (the rest as it is scrolled to, or "Load all");
# the stored prompt four times as much (plain text, no colours).
DEBUG_CHUNK_CHARS = 64_000
WARNING_TITLES: dict[WarningCode, str] = {
    WarningCode.SAME_FAMILY_VALIDATOR: "Same-family validator",
    WarningCode.UNKNOWN_CONTEXT_WINDOW: "Unknown context window",
    WarningCode.CONTEXT_OVERFLOW: "Context overflow",
    WarningCode.CHUNKED_VALIDATION: "Chunked validation",
    WarningCode.FINDINGS_MERGED: "Findings merged",
    WarningCode.UNVERIFIED_CITATIONS: "Unverified citations",
    WarningCode.PENDING_TOOL_CALLS: "Pending tool calls",
    WarningCode.NO_EVIDENCE: "No evidence",
    WarningCode.CITATIONS_REQUIRED: "Citations required",
    WarningCode.TRUNCATED_ANSWER: "Truncated answer",
    WarningCode.INCOHERENT_VERDICT: "Incoherent verdict",
    WarningCode.OTHER: "Validator warning",
}


def warning_title(code: WarningCode) -> str:
    """The analyst's name for a warning code; a code added later still gets a readable one."""
    return WARNING_TITLES.get(code) or code.value.replace("-", " ").capitalize()


def warning_line(warning: VerdictWarning) -> str:
    """Title, the count (of its total) where there is one, then the validator's words."""
    title = warning_title(warning.code)
    if warning.count is not None:
        title += (
            f" ({warning.count} of {warning.total})" if warning.total is not None else f" ({warning.count})"
        )
    return f"{title}: {warning.message}" if warning.message else title


class RedactingTextEdit(QPlainTextEdit):
    """A read-only text pane whose copies pass the workspace's redactor, like every export does.

    A raw response can echo an API key or a token from a document; Ctrl+C and the context menu's
    Copy both go through ``createMimeDataFromSelection``, so a secret cannot leave by the
    clipboard when a bundle or report would have masked it.
    """

    def createMimeDataFromSelection(self) -> QMimeData:
        """Implements ``QPlainTextEdit::createMimeDataFromSelection`` with redacted plain text."""
        selected = self.textCursor().selectedText().replace("\u2029", "\n")  # Qt's paragraph separator
        data = QMimeData()
        data.setText(redact_text(selected))
        return data


def format_raw_response(raw: str) -> tuple[str, bool]:
    """(pretty-printed text, is_json) for the pane's pretty view; non-JSON is left as received."""
    pretty = pretty_json(raw)
    return (pretty, True) if pretty is not None else (raw, False)


def raw_differences(raw: str) -> list[str]:
    """How the parsed verdict can differ from the text received, in the analyst's words.

    A parser keeps the last of two duplicate keys, skips a Markdown fence and ignores prose
    around the JSON; the raw pane shows every byte, and this says what the parse dropped so a
    reply like ``{"status": "rejected", ..., "status": "accepted"}`` cannot pass unnoticed.
    """
    stripped = raw.strip()
    if not stripped:
        return []
    found: list[str] = []
    body = stripped
    if body.startswith("```"):
        found.append("the JSON is wrapped in a Markdown code fence")
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0].strip()
    start = body.find("{")
    if start < 0:
        return found
    duplicates: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen and key not in duplicates:
                duplicates.append(key)
            seen.add(key)
        return dict(pairs)

    try:
        _value, end = json.JSONDecoder(object_pairs_hook=pairs_hook).raw_decode(body, start)
    except ValueError:
        return found
    if body[:start].strip():
        found.append("there is text before the JSON")
    if body[end:].strip():
        found.append("there is text after the JSON")
    if duplicates:
        found.insert(0, f"duplicate keys ({', '.join(duplicates)}): the parser kept the last value of each")
    return found


MARK_COLUMN = 4
MARK_TEXT = {"right": ("✓ right (+)", "#2e8b57"), "wrong": ("✗ wrong (−)", "#c0392b")}


class CitationList(QTreeWidget):
    """The validator's citations; activating one asks the evidence pane to show the quote."""

    sig_citation_activated = Signal(str, str)
    """Emitted with (evidence id, quote) when the analyst clicks or activates a citation."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setColumnCount(5)
        self.setHeaderLabels(["Check", "Id", "Verdict", "Claim", "Your mark"])
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self._citations: list[Citation] = []
        self.marks: dict[int, str] = {}  # row -> the analyst's standing mark (right | wrong)
        self.itemClicked.connect(self._on_item)
        self.itemActivated.connect(self._on_item)

    def set_citations(self, citations: list[Citation]) -> None:
        """Fill the list; the same citations again (the task re-rendered) keep the current row, so
        marking with + and − walks on where it was."""
        current = self.currentItem()
        keep = (
            self.indexOfTopLevelItem(current)
            if current is not None and citations == self._citations
            else None
        )
        self.clear()
        self._citations = list(citations)
        for row, c in enumerate(self._citations):
            text, colour = CHECK_TEXT[c.check]
            item = QTreeWidgetItem([text, c.evidence_id, str(c.verdict), c.claim])
            item.setForeground(0, QColor(colour))
            item.setData(0, Qt.ItemDataRole.UserRole, row)
            item.setToolTip(3, plain_tooltip(f"{c.claim}\n\nQuote: “{c.quote}”"))
            item.setToolTip(1, plain_tooltip(c.evidence_id))
            self.addTopLevelItem(item)
        for column in range(3):
            self.resizeColumnToContents(column)
        self.marks = {}
        kept = self.topLevelItem(keep) if keep is not None and keep >= 0 else None
        if kept is not None:
            self.setCurrentItem(kept)

    def set_marks(self, marks: dict[int, str]) -> None:
        """Show the analyst's standing marks (row -> right | wrong; ``core.tasks.citation_marks``)."""
        self.marks = dict(marks)
        for row in range(self.topLevelItemCount()):
            item = self.topLevelItem(row)
            mark = self.marks.get(row)
            if item is not None:
                text, colour = MARK_TEXT.get(mark or "", ("", "#000000"))
                item.setText(MARK_COLUMN, text)
                item.setForeground(MARK_COLUMN, QColor(colour))

    def citations(self) -> list[Citation]:
        return list(self._citations)

    def citation(self, row: int) -> Citation:
        return self._citations[row]

    def activate(self, row: int) -> None:
        """What a click does: select the row and announce its evidence id and quote."""
        citation = self._citations[row]
        item = self.topLevelItem(row)
        if item is not None:
            self.setCurrentItem(item)
        self.sig_citation_activated.emit(citation.evidence_id, citation.quote)

    def _on_item(self, item: QTreeWidgetItem, _column: int) -> None:
        self.activate(int(item.data(0, Qt.ItemDataRole.UserRole)))


def _list_html(title: str, entries: list[str]) -> str:
    if not entries:
        return ""
    rows = "".join(f"<li>{html.escape(e)}</li>" for e in entries)
    return f"<p style='margin-bottom:0'><b>{html.escape(title)}</b></p><ul style='margin-top:2px'>{rows}</ul>"


def verdict_html(
    result: ValidationResult,
    *,
    downgraded_from: str | None = None,
    warnings: list[VerdictWarning] | None = None,
) -> str:
    colour = VERDICT_COLOURS[result.status]
    head = (
        f"<p><span style='color:{colour}; font-weight:bold; font-size:large'>"
        f"{html.escape(label(result.status))}</span>"
        f" &nbsp; score <b>{result.score:.2f}</b>"
        f" &nbsp; category <b>{html.escape(label(result.category))}</b></p>"
    )
    if downgraded_from:
        head += f"<p><i>Downgraded from {html.escape(downgraded_from)}: no citation was verified.</i></p>"
    body = (
        _list_html("Issues", result.issues)
        + _list_html("Missing requirements", result.missing_requirements)
        + _list_html("Evidence gaps", result.evidence_gaps)
    )
    if result.recommended_revision_prompt:
        body += _list_html("Recommended revision", [result.recommended_revision_prompt])
    # Last: the badges above the panes already flag them; here they are spelt out with counts.
    body += _list_html("Validation warnings", [warning_line(w) for w in warnings or []])
    return head + body


class ValidatorView(QWidget):
    """Verdict and citations; raw response, rendered prompt and debug metadata in ``tabs``, placed apart."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.verdict_view = QTextBrowser(self)
        self.verdict_view.setOpenLinks(False)
        self.citations = CitationList(self)
        self.citations_label = plain_label("Citations", self)
        self.citations_label.setWordWrap(True)  # its length must not set the pane's minimum width
        self.raw_view = RedactingTextEdit(self)
        self.raw_view.setReadOnly(True)
        self.raw_view.setFont(monospace_font())
        self.raw_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self._raw_highlighter: JsonHighlighter | None = None
        self._raw = ""
        self.raw_badge = plain_label(parent=self)
        self.raw_badge.setObjectName("badge")
        self.raw_badge.setWordWrap(True)
        self.raw_badge.setStyleSheet(
            "QLabel { background: #fdebd0; color: #7e5109; border-radius: 8px; padding: 2px 8px; }"
        )
        self.raw_badge.hide()
        self.pretty_toggle = QCheckBox("Pretty-print", self)
        self.pretty_toggle.setToolTip("Show the JSON indented; the raw view shows exactly what was received")
        self.pretty_toggle.toggled.connect(lambda _on: self._render_raw())
        raw_page = QWidget(self)
        raw_bar = QHBoxLayout()
        raw_bar.setContentsMargins(4, 2, 4, 2)
        raw_bar.addWidget(self.raw_badge, 1)
        raw_bar.addWidget(self.pretty_toggle)
        self.raw_wrap_toggle = wrap_toggle(self, self._set_raw_wrap)
        raw_bar.addWidget(self.raw_wrap_toggle)
        raw_layout = QVBoxLayout(raw_page)
        raw_layout.setContentsMargins(0, 0, 0, 0)
        raw_layout.setSpacing(2)
        raw_layout.addLayout(raw_bar)
        raw_layout.addWidget(self.raw_view, 1)
        self.prompt_view = TextViewer(self, chunk_chars=DEBUG_CHUNK_CHARS * 4)  # 2.3 MB at 2 GiB of evidence
        # A chunked validation's debug holds a reply and a range list per chunk: 375 KB of JSON at
        # 1 GiB of evidence. Highlighted whole, it stalled the desk 140 ms on every selection of the
        # task; the viewer lays out (and highlights) a first part and the rest as it is scrolled to.
        self.debug_view = TextViewer(self, chunk_chars=DEBUG_CHUNK_CHARS)
        self._debug_highlighter = JsonHighlighter(self.debug_view.edit.document())
        self.tabs = QTabWidget(self)
        self.tabs.addTab(raw_page, "Raw response")
        self.tabs.addTab(self.prompt_view, "Validation prompt")
        self.tabs.addTab(self.debug_view, "Debug")
        self.raw_is_json = False

        # The verdict and its citations sit beside the answer; ``tabs`` (raw response, prompt, debug)
        # is placed by the detail pane beside the evidence, so the packet and the validator's raw
        # words are read side by side.
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.verdict_view, 3)
        layout.addWidget(self.citations_label)
        layout.addWidget(self.citations, 2)
        self.set_validation(None)

    def _set_raw_wrap(self, on: bool) -> None:
        mode = QPlainTextEdit.LineWrapMode.WidgetWidth if on else QPlainTextEdit.LineWrapMode.NoWrap
        self.raw_view.setLineWrapMode(mode)

    def set_validation(self, record: ValidationRecord | None) -> None:
        if record is None:
            self.verdict_view.setHtml("<p><i>This attempt has no validation.</i></p>")
            self.citations.set_citations([])
            self.citations_label.setText("Citations")
            self._set_raw("")
            self.raw_view.setPlaceholderText(
                "No validation for this attempt (yet)."
            )  # not "returned no text"
            self.prompt_view.set_text("")
            self.debug_view.set_text("")
            self.tabs.setTabText(self.tabs.indexOf(self.debug_view), "Debug")
            return
        try:
            result = validation_verdict(record)
        except ValidationError as exc:
            self.verdict_view.setHtml(
                "<p><b>The stored verdict could not be read:</b></p>"
                f"<pre>{html.escape(str(exc))}</pre><pre>{html.escape(json.dumps(record.result, indent=2))}</pre>"
            )
            self.citations.set_citations([])
        else:
            debug = readable_debug(record)  # None for a damaged row: the Debug tab still shows its JSON
            self.verdict_view.setHtml(
                verdict_html(
                    result,
                    downgraded_from=debug.downgraded_from if debug is not None else None,
                    warnings=read_warnings(record.debug),
                )
            )
            self.citations.set_citations(result.citations)
            verified = sum(1 for c in result.citations if c.check == CitationCheck.VERIFIED)
            self.citations_label.setText(
                f"Citations ({verified} of {len(result.citations)} verified) — click one to show its quote; "
                "+ or − marks the current one right or wrong"
                if result.citations
                else "Citations: none"
            )
        self._set_raw(record.raw_response)
        self.prompt_view.set_text(
            record.prompt
            if record.prompt is not None
            else "The validation prompt was not stored (enable debug_store_validation_prompt)."
        )
        self.debug_view.set_text(_debug_text(record.debug))
        version = record.debug.get("validator_version") if isinstance(record.debug, dict) else None
        # Which judge gave this verdict, at a glance: verdicts compare only within one version.
        self.tabs.setTabText(
            self.tabs.indexOf(self.debug_view), f"Debug · validator {version}" if version else "Debug"
        )

    def _set_raw(self, raw: str) -> None:
        self._raw = raw
        differences = raw_differences(raw)
        self.raw_badge.setText(
            "⚠ The parsed verdict differs from this text: " + "; ".join(differences) if differences else ""
        )
        self.raw_badge.setVisible(bool(differences))
        self._render_raw()

    @property
    def raw_differs(self) -> bool:
        """The warning badge is up: the parse dropped or changed something of the raw text."""
        return bool(self.raw_badge.text())

    def _render_raw(self) -> None:
        """The exact text received, or its pretty-printed form when the toggle is on."""
        raw = self._raw
        pretty, self.raw_is_json = format_raw_response(raw)
        text = pretty if self.pretty_toggle.isChecked() else raw
        self.pretty_toggle.setEnabled(self.raw_is_json)
        if self._raw_highlighter is not None:
            self._raw_highlighter.setDocument(None)
            self._raw_highlighter = None
        self.raw_view.setPlainText(text if raw else "")
        if self.raw_is_json and len(text) <= _HIGHLIGHT_LIMIT:
            self._raw_highlighter = JsonHighlighter(self.raw_view.document())
            self._raw_highlighter.rehighlight()  # now, not on the next tick: a grab must show colours
        if not raw:
            self.raw_view.setPlaceholderText("The validator returned no text.")


def _debug_text(debug: dict[str, Any]) -> str:
    """The debug record as JSON, the validator's identity first (it says which judge spoke)."""
    first = {k: debug[k] for k in ("validator_version", "validator") if k in debug}
    return json.dumps({**first, **debug}, indent=2, ensure_ascii=False, default=str)
