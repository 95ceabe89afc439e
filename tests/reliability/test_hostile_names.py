"""Names are bytes: a corpus file whose name is not UTF-8 is indexed under an escaped name and breaks
no other document; a run whose every tool call failed says so on the attempt instead of passing as
an ordinary answer without evidence."""

from __future__ import annotations

import os
from typing import Any

from tests.integration.conftest import Desk, verdict

ESCAPED = "caf\\xe9.md"  # how b"caf\xe9.md" is shown: the byte as text


def _run(desk: Desk, calls: list[dict[str, Any]]) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [{"tool_calls": calls}, {"content": "Espresso, per the notes."}]
    desk.script(
        [
            {"model": "agent", "turns": turns},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task = desk.cli_json("run", "What does the café serve?")
    shown: dict[str, Any] = desk.cli_json("show", str(task["id"]))
    return shown["attempts"][0]["packet"]["main_run"]


def test_a_non_utf8_file_name_is_indexed_escaped_and_breaks_no_other_document(desk: Desk) -> None:
    folder = os.fsencode(desk.root / "corpus")
    with open(os.path.join(folder, b"caf\xe9.md"), "wb") as fh:
        fh.write(b"# Cafe\n\nThe cafe serves espresso roasted dark.\n")
    run = _run(
        desk,
        [
            {"name": "search_corpus", "arguments": {"query": "espresso"}},
            {"name": "read_document", "arguments": {"document_id": "tides.md"}},
            {"name": "read_document", "arguments": {"document_id": ESCAPED}},
        ],
    )
    results = run["tool_results"]
    assert [r["is_error"] for r in results] == [False, False, False], results
    assert ESCAPED in results[0]["content"] and "espresso roasted" in results[2]["content"]
    assert "Moon" in results[1]["content"]
    assert not any("every tool call" in w for w in run.get("warnings", []))


def test_a_run_whose_every_tool_call_failed_carries_a_warning(desk: Desk) -> None:
    run = _run(desk, [{"name": "read_document", "arguments": {"document_id": "no-such-file.md"}}])
    assert [r["is_error"] for r in run["tool_results"]] == [True]
    warnings = run.get("warnings", [])
    assert any("every tool call of this run failed" in w and "no-such-file" in w for w in warnings), warnings
