"""Decisions CSV/JSONL, the multi-task report and the selection bundle (issue 19, points 7-8)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from core.bundle import verify_bundle
from core.domain import FeedbackAction, TaskStatus
from core.exports.bundle import export_selection
from core.exports.decisions import COLUMNS, DecisionFilter, write_decisions
from core.exports.progress import Cancellation, ExportCancelled, Step
from core.exports.report_multi import write_multi_report
from core.tasks.override import record_override
from core.tasks.review import ReviewService
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.core.bulk_seed import seed_reviewable
from tests.core.conftest import ScriptFactory

NOTE = 'Sums: =SUM(A1:A9), "quoted", comma, and\na new line — ünïcode'


async def _decided(make_settings: ScriptFactory, db_url: str, n: int = 3) -> tuple[Workspace, list[str]]:
    settings = make_settings([{"model": "agent", "turns": [{"content": "x"}]}], db_url=db_url, reviewer="ana")
    ws = await Workspace.open(settings)
    review = ReviewService(TaskService(ws))
    ids = await seed_reviewable(ws.store, n)
    for i, task_id in enumerate(ids):
        task = await ws.store.get_task(task_id)
        action = FeedbackAction.SATISFIED if i % 2 == 0 else FeedbackAction.ABANDON
        await review.feedback(task_id, action, expected_version=task.version, note=NOTE if i == 0 else None)
    await record_override(
        ws.store, ids[0], status="rejected", category="goal_missed", note="n", reviewer="ana"
    )
    return ws, ids


async def test_decisions_csv_round_trips_with_exact_columns(
    make_settings: ScriptFactory, db_url: str, tmp_path: Path
) -> None:
    ws, ids = await _decided(make_settings, db_url)
    out = tmp_path / "decisions.csv"
    summary = await write_decisions(ws.store, out, "csv")
    assert summary.rows == 3 and summary.tasks == 3
    raw = out.read_bytes()
    assert raw.startswith(b"task_id,title,") and b"\r\n" in raw  # one header row, RFC 4180 line ends
    with out.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == COLUMNS
        rows = list(reader)
    assert [r["task_id"] for r in rows] == ids
    first = rows[0]
    assert first["note"] == NOTE  # '=' mid-text is not a formula: kept as typed
    assert first["attempt"] == "1" and first["validator_status"] == "accepted"
    assert first["validator_score"] == "0.9" and first["validator_category"] == "none"
    assert first["analyst_decision"] == "satisfied" and first["analyst_override_verdict"] == "rejected"
    assert first["reviewer"] == "ana" and first["title"] == "Task 00"
    assert rows[1]["analyst_decision"] == "abandon" and rows[1]["analyst_override_verdict"] == ""
    await ws.close()


async def test_decisions_jsonl_and_filters_and_formula_guard(
    make_settings: ScriptFactory, db_url: str, tmp_path: Path
) -> None:
    ws, ids = await _decided(make_settings, db_url)
    task = await ws.store.get_task(ids[1])
    await ws.store.add_feedback(
        task_id=task.id,
        attempt_id=None,
        action="reopen",
        prompt=None,
        note='=HYPERLINK("http://x")',
        reviewer="@bo",
        from_status=TaskStatus.ABANDONED,
        to_status=TaskStatus.AWAITING_FEEDBACK,
    )
    out = tmp_path / "d.jsonl"
    await write_decisions(ws.store, out, "jsonl", DecisionFilter(reviewer="ana"))
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [tuple(row) for row in lines] == [COLUMNS] * 3
    assert lines[0]["note"] == NOTE and lines[0]["validator_score"] == 0.9 and lines[0]["attempt"] == 1
    csv_out = tmp_path / "bo.csv"
    await write_decisions(ws.store, csv_out, "csv", DecisionFilter(reviewer="@bo"))
    with csv_out.open(encoding="utf-8", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["note"] == '\'=HYPERLINK("http://x")' and row["reviewer"] == "'@bo"
    assert row["attempt"] == "" and row["analyst_decision"] == "reopen"
    await ws.close()


@pytest.mark.parametrize("kind", ["decisions", "report"])
async def test_cancel_after_k_tasks_leaves_no_file(
    make_settings: ScriptFactory, db_url: str, tmp_path: Path, kind: str
) -> None:
    ws, ids = await _decided(make_settings, db_url, n=5)
    out = tmp_path / "exports" / f"out.{kind}"
    out.parent.mkdir()
    out_seen: list[int] = []
    cancel = Cancellation()

    def progress(step: Step) -> None:
        out_seen.append(step.done)
        if step.done == 2:
            cancel.cancel()

    with pytest.raises(ExportCancelled) as info:
        if kind == "decisions":
            await write_decisions(ws.store, out, "csv", progress=progress, cancel=cancel)
        else:
            await write_multi_report(ws.store, ids, out, progress=progress, cancel=cancel)
    assert info.value.done == 2 and out_seen == [1, 2]
    assert "after 2 of 5" in str(info.value)
    assert list(out.parent.iterdir()) == []  # no output, no leftover temporary file
    await ws.close()


async def test_multi_task_report_has_the_summary_table(
    make_settings: ScriptFactory, db_url: str, tmp_path: Path
) -> None:
    ws, ids = await _decided(make_settings, db_url)
    out = tmp_path / "report.html"
    steps: list[Step] = []
    await write_multi_report(ws.store, ids, out, progress=steps.append)
    html = out.read_text(encoding="utf-8")
    assert [s.done for s in steps] == [1, 2, 3]
    assert html.count('<section class="task"') == 3
    table = html.split('<table class="summary">', 1)[1].split("</table>", 1)[0]
    assert (
        f'<tr><td><a href="#task-{ids[0]}">Task 00</a></td><td>closed</td><td>accepted</td>'
        '<td>satisfied (analyst verdict: rejected)</td><td>ana</td><td class="num">0.90</td></tr>'
    ) in table
    assert (
        f'<a href="#task-{ids[1]}">Task 01</a></td><td>abandoned</td><td>accepted</td><td>abandon</td>'
        in table
    )
    assert "Answer 2" in html and "<script" not in html
    await ws.close()


async def test_bundle_of_the_selection_verifies_and_cancel_leaves_nothing(
    make_settings: ScriptFactory, db_url: str, tmp_path: Path
) -> None:
    ws, ids = await _decided(make_settings, db_url)
    out = tmp_path / "sel.zip"
    cancel = Cancellation()
    cancel.cancel()
    with pytest.raises(ExportCancelled):
        await export_selection(ws.store, ids, out, cancel=cancel)
    assert not out.exists() and not list(tmp_path.glob(".sel.zip*"))
    summary = await export_selection(ws.store, ids[:2], out)
    assert summary.path == out and sorted(summary.task_ids) == sorted(ids[:2])
    assert verify_bundle(out).ok and not list(tmp_path.glob(".sel.zip*"))
    await ws.close()
