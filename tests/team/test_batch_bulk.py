"""Batches at team speed: a batch's jobs go to PostgreSQL in bulk, still one job per task.

The tasks of a chunk are one transaction and their jobs one batch-defer statement, so the
database itself says how the rows went in: rows written by one statement share one transaction
id (``xmin``). Before bulk queueing every job was its own transaction (one round trip per job).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from core.store import Store
from core.store import batches as batch_store
from core.tasks.dispatch import defer_tasks
from tests.team.conftest import sync_rows, write_jsonl, write_script

ROWS = 100
CHUNK = 24  # five chunks: their jobs are queued while the next chunk's tasks are inserted


@pytest.mark.slow
def test_a_bulk_queued_batch_is_one_job_per_task_and_all_of_them_run(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_store, "CHUNK", CHUNK)
    chunks = -(-ROWS // CHUNK)
    script = write_script(tmp_path / "script.json")
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    capsys.readouterr()
    assert cli_main(["batch", str(rows), "--db", pg_url, "--script", str(script), "--json"]) == 0
    ids = json.loads(capsys.readouterr().out)["task_ids"]
    assert len(set(ids)) == ROWS
    jobs = sync_rows(pg_url, "select lock, queueing_lock, status, xmin::text from procrastinate_jobs")
    assert sorted(j[0] for j in jobs) == sorted(ids)  # exactly one job per task
    assert all(j[1] == j[0] and j[2] == "todo" for j in jobs)
    assert len({j[3] for j in jobs}) == chunks  # one statement per chunk, not one per job
    assert len({x for (x,) in sync_rows(pg_url, "select xmin::text from tasks")}) == chunks

    capsys.readouterr()
    code = cli_main(
        ["worker", "--db", pg_url, "--script", str(script), "--once", "--concurrency", "8", "--json"]
    )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["finished"] == {"awaiting_feedback": ROWS}
    assert sync_rows(pg_url, "select status, attempt_count, count(*) from tasks group by 1, 2") == [
        ("awaiting_feedback", 1, ROWS)
    ]
    assert sync_rows(pg_url, "select count(*), count(distinct task_id) from attempts") == [(ROWS, ROWS)]
    assert sync_rows(pg_url, "select count(*) from procrastinate_jobs") == [(0,)]  # succeeded: deleted


async def test_tasks_a_sweep_queued_meanwhile_get_no_second_job(pg_url: str) -> None:
    """A worker's start-up sweep may queue some of the same open tasks at the same moment: the
    chunk's one statement is refused whole, and the chunk goes job by job, skipping those."""
    store = await Store.open(pg_url)
    try:
        ids = [(await store.create_task(f"Question {i}?")).id for i in range(12)]
        assert await defer_tasks(store, ids[3:5]) == 2  # the sweep's
        assert await defer_tasks(store, ids) == 10
        assert await defer_tasks(store, ids) == 0
    finally:
        await store.close()
    locks = sync_rows(pg_url, "select lock from procrastinate_jobs")
    assert sorted(lock for (lock,) in locks) == sorted(ids)
