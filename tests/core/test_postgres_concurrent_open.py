"""Many processes opening one new PostgreSQL workspace at once: every one of them succeeds.

Runs when EVIDENCE_DESK_TEST_PG_URL points at a scratch server (the user must be allowed to
create databases); each run makes its own fresh database and drops it afterwards.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_URL = os.environ.get("EVIDENCE_DESK_TEST_PG_URL")
pytestmark = pytest.mark.skipif(not PG_URL, reason="EVIDENCE_DESK_TEST_PG_URL not set (a scratch PostgreSQL)")
REPO = Path(__file__).resolve().parents[2]
PROCESSES = 12


async def _admin(sql: str) -> None:
    import asyncpg  # type: ignore[import-untyped]
    from sqlalchemy.engine import make_url

    assert PG_URL is not None
    url = make_url(PG_URL)
    conn = await asyncpg.connect(
        user=url.username, password=url.password, host=url.host, port=url.port, database=url.database
    )
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture
def fresh_database() -> Iterator[str]:
    from sqlalchemy.engine import make_url

    assert PG_URL is not None
    name = f"evidence_desk_concurrent_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_URL).set(drivername="postgresql", database=name).render_as_string(False)
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


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
