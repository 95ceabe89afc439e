"""No machine paths or login names in what is shared (issue 15, point 10).

A task searches and reads the corpus and is decided under the OS login name; its exported bundle and
its report are scanned, byte by byte, for the home folder, the workspace folder, the corpus folder,
``file://`` URLs and the login name. ``--include-paths`` is the analyst's explicit way to keep them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.integration.conftest import Desk, verdict

LOGIN = "ana-7f3q"
SEARCH = {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides moon"}}]}
READ = {"tool_calls": [{"name": "read_document", "arguments": {"document_id": "tides.md"}}]}


def _shared_text(bundle: Path, report: Path) -> str:
    with zipfile.ZipFile(bundle) as zf:
        parts = [zf.read(i).decode("utf-8", errors="replace") for i in zf.infolist()]
    return "\n".join([*parts, report.read_text(encoding="utf-8")])


@pytest.fixture
def decided(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> str:
    home = desk.root / "home" / LOGIN
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, LOGIN)
    desk.script(
        [
            {"model": "agent", "turns": [SEARCH, READ, {"content": "Tides come mainly from the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    assert task["status"] == "awaiting_feedback"
    desk.cli_json("feedback", str(task["id"]), "satisfied", "--note", "fine")
    return str(task["id"])


def test_bundle_and_report_carry_no_machine_paths_or_login(desk: Desk, decided: str) -> None:
    shown = desk.cli_json("show", decided)
    tool_results = [e for e in shown["events"] if e["kind"] == "tool_result_recorded"]
    assert tool_results, "the task read the corpus"
    read = next(e["payload"] for e in tool_results if e["payload"]["tool_name"] == "read_document")
    assert read["url"] == "corpus:tides.md" and "file://" not in str(read)
    assert read["data"]["path"] == "tides.md" and len(read["data"]["sha256"]) == 64

    bundle, report = desk.root / "out" / "case.zip", desk.root / "out" / "case.html"
    assert desk.cli("export", decided, "-o", str(bundle))[0] == 0
    assert desk.cli("report", decided, "-o", str(report))[0] == 0
    shared = _shared_text(bundle, report)
    for leak in (str(desk.root), str(Path.home()), LOGIN, "file://"):
        assert leak not in shared, f"{leak!r} leaked into the bundle or report"
    assert "[user]" in shared  # the decision still says a reviewer made it
    assert desk.cli("verify", str(bundle))[0] == 0

    kept, kept_report = desk.root / "out" / "kept.zip", desk.root / "out" / "kept.html"
    assert desk.cli("export", decided, "-o", str(kept), "--include-paths")[0] == 0
    assert desk.cli("report", decided, "-o", str(kept_report), "--include-paths")[0] == 0
    assert LOGIN in _shared_text(kept, kept_report)
