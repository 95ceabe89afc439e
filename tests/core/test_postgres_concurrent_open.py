"""Many processes opening one new PostgreSQL workspace at once: every one of them succeeds.

Runs on the test session's throw-away server (tests/pg.py), on a database of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import zygote

REPO = Path(__file__).resolve().parents[2]
PROCESSES = 12


@pytest.fixture
def fresh_database(pg_url: str) -> str:
    """A new, empty database of the session's throw-away server, as a plain libpq-style URL."""
    from sqlalchemy.engine import make_url

    return make_url(pg_url).set(drivername="postgresql").render_as_string(False)


@pytest.mark.slow
def test_concurrent_first_open_all_succeed(fresh_database: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    logs = [tmp_path / f"stderr-{n}.txt" for n in range(PROCESSES)]
    procs = []
    for log in logs:  # real processes, forked from the zygote (tests/zygote.py): they race as any would
        with log.open("wb") as err:
            argv = ["-m", "core.cli", "list", "--db", fresh_database]
            procs.append(zygote.spawn(argv, env, stdout=zygote.DEVNULL, stderr=err))
    results = [
        (p.wait(timeout=180), log.read_text(errors="replace")) for p, log in zip(procs, logs, strict=True)
    ]
    failures = [err for code, err in results if code != 0]
    assert failures == [], f"{len(failures)} of {PROCESSES} failed; first: {failures[0] if failures else ''}"
