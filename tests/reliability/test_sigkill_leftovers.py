"""An export or import killed outright (SIGKILL) leaves nothing the next start does not clean.

Each victim is a real command-line process stopped at a point it signals (``paused_child``: a line
on stdout when its ``.part`` file is written, or when its texts are stored and its rows are not),
then killed with SIGKILL, so no ``finally`` of ours runs. The next export into that folder removes
the dead process's ``.part`` file, and the next start of the workspace releases the killed
import's texts, each with one log line; the work of a live process is never touched.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core.leftovers import sweep_part_files
from tests.integration.conftest import ROOT, Desk, verdict
from tests.keyrings import MemoryKeyring

# Above the 64 KiB inline limit, so the read is stored as chunks (what an import streams first).
BIG_DOC = "".join(f"Line {n}: the tide table of harbour {n % 97} at dawn.\n" for n in range(4000))


def _start(point: str, *args: str) -> subprocess.Popen[str]:
    """A child ``evidence-desk ARGS`` that stops at ``point`` (``_wait`` learns when it is there)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "tests.reliability.paused_child", point, *args]
    return subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the child prints, or reads "" if it died first
    if line.strip() != "PAUSED":
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the child never reached its pause point: {line!r} {err[-2000:]}")


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def _count(db: Path, sql: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(sql).fetchone()[0])


def _task_with_big_evidence(desk: Desk) -> str:
    (desk.root / "corpus" / "tables.md").write_text(BIG_DOC, encoding="utf-8")
    desk.script(
        [
            {
                "model": "agent",
                "turns": [
                    {
                        "tool_calls": [
                            {
                                "name": "read_document",
                                "arguments": {"document_id": "tables.md", "length": 200_000},
                            }
                        ]
                    },
                    {"content": "Tides follow the Moon."},
                ],
            },
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    return str(desk.cli_json("run", "Tides?")["id"])


def test_a_killed_export_and_a_killed_import_are_cleaned_up_next_time(
    desk: Desk, memory_keyring: MemoryKeyring, caplog: pytest.LogCaptureFixture
) -> None:
    task_id = _task_with_big_evidence(desk)
    bundle = desk.root / "case.zip"
    assert desk.cli("export", task_id, "-o", str(bundle))[0] == 0
    audit = desk.root / "audit.sqlite3"
    assert desk.cli("list", "--db", str(audit))[0] == 0  # the auditor's workspace, empty
    out = desk.root / "out"
    out.mkdir()
    common = ("--script", str(desk.root / "script.json"), "--corpus", str(desk.root / "corpus"))
    # Both victims at once: each start is mostly importing litellm.
    exporter = _start(
        "publish", "export", task_id, "-o", str(out / "case.zip"), "--db", str(desk.db), *common
    )
    importer = _start("import-rows", "import", str(bundle), "--trust", "--db", str(audit), *common)
    try:
        _wait(exporter)
        _wait(importer)
        parts = list(out.glob(".*.part"))
        assert len(parts) == 1 and parts[0].stat().st_size > 0, parts
        # A live export's file is never swept, from this process or any other.
        assert sweep_part_files(out) == 0 and parts[0].exists()
        stored = _count(audit, "select count(*) from content_chunks")
        assert stored > 0 and _count(audit, "select count(*) from tasks") == 0
    finally:
        _kill(exporter)
        _kill(importer)
    assert parts[0].exists() and _count(audit, "select count(*) from content_chunks") == stored

    with caplog.at_level(logging.WARNING):
        code, _, err = desk.cli("export", task_id, "-o", str(out / "again.zip"))
        assert code == 0, err
        assert desk.cli("list", "--db", str(audit))[0] == 0  # the next start of the auditor's workspace
    assert list(out.glob(".*.part")) == [] and (out / "again.zip").exists()
    assert _count(audit, "select count(*) from content_chunks") == 0
    assert _count(audit, "select count(*) from content_owners") == 0
    said = [r.getMessage() for r in caplog.records]
    assert len([m for m in said if "unfinished export file" in m]) == 1, said
    assert len([m for m in said if "interrupted import" in m]) == 1, said
    # The workspace took no harm: the same bundle imports whole afterwards.
    code, _, err = desk.cli("import", str(bundle), "--trust", "--db", str(audit))
    assert code == 0, err
    assert _count(audit, "select count(*) from content_chunks") == stored
