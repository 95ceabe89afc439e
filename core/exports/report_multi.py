"""One HTML report for many tasks: a summary table, then each task's own audit section.

Each section is the single-task page (``core.bundle.report``) rendered from the same masked,
scrubbed data, so a task reads the same alone or among others; the summary table lists title,
status, the validator's verdict, the analyst's decision (and override), reviewer and score, with a
link to the section. Tasks are read one at a time with progress and cancellation between them,
and the page is written to a temporary file renamed at the end.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.bundle.format import BundleError
from core.bundle.paths import MachineScrub, machine_scrub
from core.bundle.redact import Redactor
from core.bundle.report import ReportData, render_report, workspace_report_data
from core.exports.progress import Cancellation, ProgressSink, Step, check, replacing
from core.store import Store
from core.version import app_version

_BODY = re.compile(r"<body>\n?(.*)</body>", re.S)
_STYLE = re.compile(r"<style>.*?</style>", re.S)

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="Evidence Desk {{ version }}">
<title>Audit report: {{ rows | length }} tasks</title>
{{ style | safe }}
<style>section.task { border-top: 3px solid #888; margin-top: 3em; } td.num { text-align: right; }</style>
</head>
<body>
<h1>Audit report: {{ rows | length }} task(s)</h1>
<p class="meta">Source: {{ source }} · generated {{ generated }} by Evidence Desk {{ version }}</p>
<table class="summary">
<thead><tr><th>Title</th><th>Status</th><th>Validator verdict</th><th>Analyst decision</th><th>Reviewer</th><th>Score</th></tr></thead>
<tbody>
{% for row in rows %}<tr><td><a href="#task-{{ row.task_id }}">{{ row.title }}</a></td><td>{{ row.status }}</td><td>{{ row.verdict }}</td><td>{{ row.decision }}</td><td>{{ row.reviewer }}</td><td class="num">{{ row.score }}</td></tr>
{% endfor %}</tbody>
</table>
{% for row in rows %}<section class="task" id="task-{{ row.task_id }}">
{{ row.body | safe }}
</section>
{% endfor %}
</body>
</html>
"""


@dataclass(frozen=True)
class SummaryRow:
    task_id: str
    title: str
    status: str
    verdict: str
    decision: str
    reviewer: str
    score: str
    body: str = ""


def summary_row(data: ReportData, body: str = "") -> SummaryRow:
    """The table's line for one task: its latest verdict and the analyst's last decision."""
    task = data.task
    last = data.feedback[-1] if data.feedback else None
    latest = data.attempts[-1] if data.attempts else None
    override = latest.analyst_verdict if latest is not None else None
    decision = last.action if last is not None else "—"
    if override is not None:
        decision += f" (analyst verdict: {override.status.value.replace('_', ' ')})"
    return SummaryRow(
        task_id=task.id,
        title=task.title,
        status=task.status.value.replace("_", " "),
        verdict=(task.latest_validation_status or "—").replace("_", " "),
        decision=decision,
        reviewer=last.reviewer if last is not None else "—",
        score=f"{task.latest_score:.2f}" if task.latest_score is not None else "—",
        body=body,
    )


def render_multi_report(sections: Sequence[tuple[ReportData, str]], source: str, generated: str) -> str:
    """The page around already rendered single-task pages (their bodies become sections)."""
    from jinja2 import Environment, StrictUndefined

    style = ""
    rows = []
    for data, page in sections:
        match = _BODY.search(page)
        style = style or (m.group(0) if (m := _STYLE.search(page)) else "")
        rows.append(summary_row(data, match.group(1) if match else ""))
    env = Environment(autoescape=True, undefined=StrictUndefined)
    return env.from_string(_PAGE).render(
        rows=rows, style=style, source=source, generated=generated, version=app_version()
    )


async def write_multi_report(
    store: Store,
    task_ids: Sequence[str],
    out: Path,
    *,
    redact: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    scrub: MachineScrub | None = None,
    progress: ProgressSink | None = None,
    cancel: Cancellation | None = None,
) -> Path:
    """Write the report for ``task_ids`` (one or many); ``ExportCancelled`` leaves no file."""
    if not task_ids:
        raise BundleError("select at least one task to report on")
    redactor = await asyncio.to_thread(Redactor.build, redact, environ)
    scrub = scrub or machine_scrub()
    sections: list[tuple[ReportData, str]] = []
    total = len(task_ids)
    for done, task_id in enumerate(task_ids):
        check(cancel, "report", done, total)
        data = await workspace_report_data(store, task_id, redactor, scrub)
        sections.append((data, await asyncio.to_thread(render_report, data)))
        if progress is not None:
            progress(Step(done + 1, total, data.task.title))
    source = scrub.text(f"workspace {store.display_name}")
    generated = sections[0][0].generated_at
    html = await asyncio.to_thread(render_multi_report, sections, source, generated)
    label = redactor.leftover(Path(out).name, html)
    if label is not None:
        raise BundleError(f"redaction {label} still matches in the report after masking; nothing was written")

    def write() -> None:
        with replacing(Path(out)) as fh:
            fh.write(html)

    await asyncio.to_thread(write)
    return Path(out)


__all__ = ["SummaryRow", "render_multi_report", "summary_row", "write_multi_report"]
