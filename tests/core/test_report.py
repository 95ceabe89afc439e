"""The audit report: complete, escaped, standalone, and available from a bundle."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from core.bundle import export_bundle, open_bundle, write_report, write_report_from_bundle
from core.bundle.format import events_entry, task_entry
from core.bundle.report import PREVIEW_CHARS
from core.store import Store
from tests.core.test_bundle import make_case

HOSTILE = '<script>alert("x")</script><img src="http://evil.example/p.png">'


def assert_standalone(html: str) -> None:
    lowered = html.lower()
    for forbidden in ("<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", "url("):
        assert forbidden not in lowered, forbidden
    assert re.search(r"<[a-z][^<>]*\ssrc=", lowered) is None
    # No attribute may point off the page; the only hrefs are in-page anchors.
    assert re.findall(r'href="([^"#][^"]*)"', html) == []


async def test_report_shows_answer_verdict_citations_evidence_and_feedback(
    store: Store, tmp_path: Path
) -> None:
    task_id = await make_case(store, answer=f"About 10,935 m deep. {HOSTILE}")
    out = await write_report(store, task_id[:8], tmp_path / "r" / "report.html")
    html = out.read_text(encoding="utf-8")
    assert "About 10,935 m deep." in html
    assert "&lt;script&gt;alert(" in html  # the hostile answer is shown, escaped
    assert 'class="verdict v-accepted">accepted<' in html
    assert "reaches about 10,935 m below sea level" in html  # the cited quote
    assert 'href="#a1-E1"' in html and 'id="a1-E1"' in html  # citation links to the evidence index
    assert "Mariana Trench" in html and "search_documents" in html
    assert "Checked against NOAA figures." in html and "ana" in html
    assert "satisfied" in html and "awaiting_feedback → closed" in html
    assert "FAILED verification" not in html
    assert_standalone(html)


async def test_large_evidence_is_previewed_with_a_note(store: Store, tmp_path: Path) -> None:
    doc = "tide " * 5000
    task_id = await make_case(store, evidence=doc)
    html = (await write_report(store, task_id, tmp_path / "report.html")).read_text(encoding="utf-8")
    assert f"first {PREVIEW_CHARS} of {len(doc)} characters" in html
    assert len(html) < len(doc)


async def test_report_from_a_tampered_bundle_carries_the_failures(store: Store, tmp_path: Path) -> None:
    task_id = await make_case(store)
    bundle = tmp_path / "case.zip"
    await export_bundle(store, [task_id], bundle, environ={})
    good = open_bundle(bundle)
    html = (await write_report_from_bundle(good, task_id, tmp_path / "good.html")).read_text(encoding="utf-8")
    assert "Case bundle verified" in html
    assert "reaches about 10,935 m below sea level" in html

    task = await store.get_task(task_id)
    assert task.main_session_id is not None
    name = events_entry(task.main_session_id)
    with zipfile.ZipFile(bundle) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    entries[name] = entries[name].replace(b"10,935", b"9,999")
    entries[task_entry(task_id, "feedback.json")] += b" "
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        for n, blob in entries.items():
            zf.writestr(n, blob)
    html = (await write_report_from_bundle(open_bundle(bad), task_id, tmp_path / "bad.html")).read_text(
        encoding="utf-8"
    )
    assert "This case bundle FAILED verification" in html
    assert f"{name}: event seq 4" in html
    assert f"{task_entry(task_id, 'feedback.json')}: sha256 mismatch" in html
    assert_standalone(html)
