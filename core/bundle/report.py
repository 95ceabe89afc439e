"""The audit report: one standalone HTML page per task that opens in any browser with no network.

The page carries no external CSS, scripts, fonts or images, and every value is escaped by jinja2's
autoescape, because answers, quotes and evidence are untrusted text that may contain markup.
Evidence contents are previewed, not reproduced whole (a packet can hold tens of megabytes); the
page says how much it shows, and the case bundle holds the full text.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.bundle.format import BundleError
from core.bundle.markdown import markdown_html
from core.bundle.opened import OpenedBundle
from core.bundle.paths import MachineScrub, machine_scrub
from core.bundle.redact import Redactor
from core.domain.content import has_refs
from core.domain.evidence import TaskEvidencePacket
from core.domain.facts import EventKind
from core.domain.labels import outcome_label
from core.domain.records import AttemptRecord, FeedbackRecord, TaskRecord, ValidationRecord
from core.domain.usage import USAGE_EVENT_KINDS, UsageTotals
from core.evidence.content import ContentReader, item_length, item_range
from core.evidence.render import render_packet
from core.leftovers import new_part_file
from core.progress import advance, expect
from core.store import Store
from core.tasks.dossier import TaskDossier, load_dossier
from core.tasks.override import AnalystVerdict, dossier_overrides
from core.version import app_version

__all__ = [
    "ReportData",
    "build_report_data",
    "evidence_previews",
    "render_report",
    "report_data_from_bundle",
    "workspace_report_data",
    "write_report",
    "write_report_from_bundle",
]

TEMPLATE_PATH = Path(__file__).resolve().parents[2] / "resources" / "prompts" / "report.html.j2"
PREVIEW_CHARS = 4000


@dataclass
class EvidenceRow:
    evidence_id: str
    kind: str
    source: str
    title: str | None
    url: str | None
    is_error: bool
    length: int
    preview: str


@dataclass
class AttemptView:
    attempt: AttemptRecord
    validation: ValidationRecord | None
    citations: list[dict[str, Any]]
    evidence: list[EvidenceRow]
    evidence_note: str | None = None
    # Evidence id -> the attempt whose index lists it: a retry's verdict may cite an item an
    # earlier attempt gathered (ids are task-wide), and its link must reach that attempt's row.
    anchors: dict[str, int] = field(default_factory=dict)
    usage: UsageTotals | None = None
    analyst_verdict: AnalystVerdict | None = None  # kept beside the validator's, never over it


@dataclass
class ReportData:
    task: TaskRecord
    attempts: list[AttemptView]
    feedback: list[FeedbackRecord]
    source: str
    verification: list[str] | None = None  # bundle failures; None when read from a workspace
    usage: UsageTotals | None = None
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))
    app_version: str = field(default_factory=app_version)
    preview_chars: int = PREVIEW_CHARS


def _evidence(attempt: AttemptRecord, previews: Mapping[str, str]) -> tuple[list[EvidenceRow], str | None]:
    """The attempt's evidence rows; a big item (left in the chunk store) takes its preview from
    ``previews``, read beforehand as a range, so its text is never held here."""
    if not attempt.packet:
        return [], "No evidence packet was recorded for this attempt."
    try:
        packet = TaskEvidencePacket.model_validate(attempt.packet)
    except ValidationError as exc:
        return [], f"The evidence packet could not be read ({exc.error_count()} errors)."
    items = render_packet(packet).items
    return [
        EvidenceRow(
            evidence_id=i.evidence_id,
            kind=i.kind.replace("_", " "),
            source=i.source,
            title=i.title,
            url=i.url,
            is_error=i.is_error,
            length=item_length(i),
            preview=previews.get(i.evidence_id, "")
            if i.content_ref is not None
            else i.content[:PREVIEW_CHARS],
        )
        for i in items
    ], None


def build_report_data(
    dossier: TaskDossier,
    *,
    source: str,
    verification: list[str] | None = None,
    previews: Mapping[str, str] | None = None,
) -> ReportData:
    """Pure assembly from the dossier ``show`` and the desk read, so the page states each attempt's
    recorded outcome exactly as they do; the evidence index uses the ids the validator cited.

    A dossier read without resolving carries big items as chunk references: ``previews`` holds
    their previews by evidence id (``evidence_previews``)."""
    views = []
    seen: dict[str, int] = {}
    per_attempt = dossier.attempt_usage()
    overrides = dossier_overrides(dossier)
    for a in sorted(dossier.attempts, key=lambda x: x.index):
        v = dossier.validation_for(a.index)
        citations = v.result.get("citations", []) if v is not None else []
        rows, note = _evidence(a, previews or {})
        seen.update({row.evidence_id: a.index for row in rows})  # an attempt's own ids come first
        views.append(
            AttemptView(
                attempt=a,
                validation=v,
                citations=[c for c in citations if isinstance(c, dict)],
                evidence=rows,
                evidence_note=note,
                anchors=dict(seen),
                usage=per_attempt.get(a.index),
                analyst_verdict=overrides.get(a.index),
            )
        )
    return ReportData(
        task=dossier.task,
        attempts=views,
        feedback=dossier.feedback,
        source=source,
        verification=verification,
        usage=dossier.usage(),
    )


def render_report(data: ReportData) -> str:
    """Render the page; blocking (packets can be large), so async callers use a thread."""
    from jinja2 import Environment, StrictUndefined, TemplateError

    try:
        source = TEMPLATE_PATH.read_text(encoding="utf-8")
    except OSError as exc:
        raise BundleError(f"report template {TEMPLATE_PATH} is missing: {exc.strerror or exc}") from None
    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["outcome_label"] = outcome_label  # the words of show and the desk, not stored values
    env.filters["markdown"] = markdown_html  # the answer as the desk shows it: Markdown, no HTML, links inert
    try:
        return env.from_string(source).render(r=data)
    except TemplateError as exc:
        raise BundleError(f"cannot render the audit report: {exc}") from None


def _write_text(out: Path, html: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = new_part_file(out)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(html)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _redacted(dossier: TaskDossier, redactor: Redactor, scrub: MachineScrub | None = None) -> TaskDossier:
    """The page is a way out of the workspace like a bundle: the same secrets are masked in it, and
    the same machine paths and login name rewritten."""
    data = dossier.model_dump(mode="json")
    return TaskDossier.model_validate(redactor.value((scrub or machine_scrub()).value(data), "report"))


async def _render_and_write(data: ReportData, out: Path, redactor: Redactor) -> Path:
    def work() -> None:
        html = render_report(data)
        label = redactor.leftover(out.name, html)
        if label is not None:
            raise BundleError(
                f"redaction {label} still matches in the report after masking; nothing was written"
            )
        _write_text(out, html)

    try:
        await asyncio.to_thread(work)
    except OSError as exc:
        raise BundleError(f"cannot write report {out}: {exc.strerror or exc}") from None
    return out


async def write_report(
    store: Store,
    task_id: str,
    out: Path,
    *,
    redact: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    scrub: MachineScrub | None = None,
) -> Path:
    """Write the audit page for one workspace task (``task_id`` may be a unique prefix), with secrets
    masked as in an export (``redact`` and ``environ`` as for ``export_bundle``)."""
    expect(3, "step")
    redactor = await asyncio.to_thread(Redactor.build, redact, environ)
    advance(1, "step")
    data = await workspace_report_data(store, task_id, redactor, scrub or machine_scrub())
    advance(1, "step")
    written = await _render_and_write(data, Path(out), redactor)
    advance(1, "step")
    return written


async def workspace_report_data(
    store: Store, task_id: str, redactor: Redactor, scrub: MachineScrub
) -> ReportData:
    """One task's page data, masked and scrubbed: what a single report and each section of a
    multi-task report (``core.exports.report_multi``) are rendered from.

    Big evidence stays in the chunk store: only each item's previewed range is read
    (``evidence_previews``), so a task with a gigabyte of tool results costs its previews.
    """
    dossier = await load_dossier(store, task_id, with_events=False, resolve=False)  # no events listed...
    # ...but states what the calls used, which only the (small) call events record.
    kinds = [*USAGE_EVENT_KINDS, EventKind.ANALYST_VERDICT_RECORDED]  # and the analyst's verdicts
    usage_events = await store.get_task_events(dossier.task.id, kinds=kinds, resolve=False)
    dossier = dossier.model_copy(update={"events": usage_events})
    source = scrub.text(f"workspace {store.display_name}")
    masked = _redacted(dossier, redactor, scrub)
    previews = await evidence_previews(store, masked, redactor, scrub)
    return build_report_data(masked, source=source, previews=previews)


async def evidence_previews(
    store: ContentReader, dossier: TaskDossier, redactor: Redactor, scrub: MachineScrub
) -> dict[str, str]:
    """The preview of every evidence item left in the chunk store, by evidence id.

    Reads a range a little past the preview (``PREVIEW_CHARS`` more) and masks it before cutting,
    so a secret straddling the preview's end is masked whole rather than shown in part.
    """
    out: dict[str, str] = {}
    for attempt in dossier.attempts:
        if not attempt.packet or not has_refs(attempt.packet):
            continue
        try:
            packet = TaskEvidencePacket.model_validate(attempt.packet)
        except ValidationError:
            continue  # the page says the packet could not be read
        for item in render_packet(packet).items:
            if item.content_ref is None:
                continue
            text = await item_range(store, item, 0, 2 * PREVIEW_CHARS)
            out[item.evidence_id] = redactor.text(scrub.text(text), "report")[:PREVIEW_CHARS]
    return out


async def report_data_from_bundle(
    opened: OpenedBundle, task_id: str, redactor: Redactor | None = None
) -> ReportData:
    """A bundle's task as page data. A format-2 bundle keeps big texts as content members, so
    their previews are read by range from the zip (``OpenedBundle`` is a ``ContentReader``), as a
    workspace's are read from its chunk store: the page never holds a whole big text."""
    dossier = opened.dossier(task_id)
    if redactor is None:  # the caller masks nothing: previews are read as they are
        masked, redactor, scrub = dossier, Redactor([]), machine_scrub(include_paths=True)
    else:
        scrub = machine_scrub()
        masked = _redacted(dossier, redactor, scrub)
    previews = await evidence_previews(opened, masked, redactor, scrub)
    return build_report_data(
        masked,
        source=f"case bundle {opened.path.name} ({opened.bundle_id[:12]})",
        verification=opened.report.failures + opened.load_problems,
        previews=previews,
    )


async def write_report_from_bundle(
    opened: OpenedBundle,
    task_id: str,
    out: Path,
    *,
    redact: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Path:
    """Report from a bundle without importing it; a failed verification is printed at the top.

    Masked again: a bundle written by an older version, or by hand, may hold what ours would mask.
    """
    expect(3, "step")
    redactor = await asyncio.to_thread(Redactor.build, redact, environ)
    advance(1, "step")
    data = await report_data_from_bundle(opened, task_id, redactor)
    advance(1, "step")
    written = await _render_and_write(data, Path(out), redactor)
    advance(1, "step")
    return written
