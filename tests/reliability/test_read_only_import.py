"""Read-only means read-only: an imported task refuses every action that appends to its signed log."""

from __future__ import annotations

import sqlite3

from tests.integration.conftest import Desk, verdict
from tests.keyrings import MemoryKeyring


def _events(db: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from events").fetchone()[0])


def test_override_claim_and_release_are_refused_on_an_imported_task(
    desk: Desk, memory_keyring: MemoryKeyring
) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides follow the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task_id = str(desk.cli_json("run", "Tides?")["id"])
    bundle = desk.root / "case.zip"
    assert desk.cli("export", task_id, "-o", str(bundle))[0] == 0
    other = str(desk.root / "audit.sqlite3")
    code, _, err = desk.cli("import", str(bundle), "--trust", "--db", other)
    assert code == 0, err
    before = _events(other)
    for argv in (
        ("override", task_id, "--status", "rejected", "--note", "mine"),
        ("claim", task_id, "--reviewer", "auditor"),
        ("claim", task_id, "--reviewer", "auditor", "--take-over"),
        ("release", task_id, "--reviewer", "auditor"),
    ):
        code, _, err = desk.cli(*argv, "--db", other)
        assert code == 3 and "imported read-only" in err, (argv, code, err)
    assert _events(other) == before
