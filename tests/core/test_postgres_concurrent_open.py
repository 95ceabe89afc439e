"""Many processes opening one new PostgreSQL workspace at once: every one of them succeeds.

Runs on the test session's throw-away server (tests/pg.py), on a database of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROCESSES = 12


@pytest.fixture
def fresh_database(pg_url: str) -> str:
    """A new, empty database of the session's throw-away server, as a plain libpq-style URL."""
    from sqlalchemy.engine import make_url

    return make_url(pg_url).set(drivername="postgresql").render_as_string(False)


@pytest.mark.slow
def test_concurrent_first_open_all_succeed(fresh_database: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "core.cli", "list", "--db", fresh_database],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    results = [(p.wait(timeout=180), p.communicate()[1]) for p in procs]
    failures = [err for code, err in results if code != 0]
    assert failures == [], f"{len(failures)} of {PROCESSES} failed; first: {failures[0] if failures else ''}"
