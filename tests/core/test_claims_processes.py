"""Two processes claiming "next task" from one SQLite workspace: each task goes to one of them.

On SQLite the pick-and-claim is one ``BEGIN IMMEDIATE`` transaction, which serialises writers
across processes, not only across the coroutines of one. Both children are released together by
one line on their stdin (no sleeping), then claim until nothing is left.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert

from core.domain.status import TaskStatus
from core.store import Store
from core.store.models import TaskRow

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import asyncio, json, sys
from core.store import Store
from core.tasks.claims import Claims

async def main(url, reviewer):
    store = await Store.open(url)
    print("ready", flush=True)
    sys.stdin.readline()
    got = []
    try:
        while (task := await Claims(store).next_unclaimed(reviewer)) is not None:
            got.append(task.id)
    finally:
        await store.close()
    print(json.dumps(got), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def _seed(url: str, n: int) -> list[str]:
    store = await Store.open(url)
    now = datetime.now(UTC)
    ids = [uuid.uuid4().hex for _ in range(n)]
    rows = [
        {"id": i, "title": "t", "text": "t", "status": TaskStatus.NEEDS_REVIEW.value, "version": 1,
         "attempt_count": 0, "read_only": False, "created_at": now, "updated_at": now}
        for i in ids
    ]  # fmt: skip
    async with store.write_engine.begin() as conn:
        await conn.execute(insert(TaskRow), rows)
    await store.close()
    return ids


def test_two_processes_claim_each_task_once(sqlite_url: str) -> None:
    ids = asyncio.run(_seed(sqlite_url, 100))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, sqlite_url, f"proc{n}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in range(2)
    ]
    try:
        for child in children:  # both have the workspace open before either starts claiming
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        results = []
        for child in children:
            out, _ = child.communicate(timeout=120)
            assert child.returncode == 0
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    claimed = [t for got in results for t in got]
    assert len(claimed) == 100 and set(claimed) == set(ids)
