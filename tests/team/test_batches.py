"""Batches: one task per row, a re-run queues nothing twice, bad files are refused untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from tests.team.conftest import sync_rows, write_jsonl, write_script

ROWS = 1_000


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_batch_of_1000_rows_rerun_is_1000_tasks_not_2000(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = write_jsonl(tmp_path / "flagged.jsonl", ROWS)
    script = write_script(tmp_path / "script.json")
    code, out, err = _cli(
        capsys, "batch", str(batch), "--db", db_url, "--create", "--script", str(script), "--json"
    )
    assert code == 0, err
    first = json.loads(out)
    assert first["created"] == ROWS and len(first["task_ids"]) == ROWS
    code, out, err = _cli(capsys, "batch", str(batch), "--db", db_url, "--script", str(script), "--json")
    assert code == 0, err
    second = json.loads(out)
    assert second["created"] == 0 and second["existing"] == ROWS
    assert second["task_ids"] == first["task_ids"]  # the same tasks, in row order
    assert sync_rows(db_url, "select count(*) from tasks") == [(ROWS,)]
    assert sync_rows(db_url, "select count(distinct batch_id) from tasks") == [(1,)]
    # every task has its main session, and the row's metadata travelled with it
    assert sync_rows(db_url, "select count(*) from tasks t join sessions s on s.id = t.main_session_id") == [
        (ROWS,)
    ]
    meta = sync_rows(db_url, "select task_metadata from tasks where batch_key = 'row-7'")
    stored = json.loads(meta[0][0]) if isinstance(meta[0][0], str) else meta[0][0]
    assert stored == {"row": 6}
    if "postgresql" in db_url:  # one procrastinate job per task, not one per run of the file
        assert sync_rows(db_url, "select count(*) from procrastinate_jobs") == [(ROWS,)]


def test_csv_batch_keeps_keys_answers_and_extra_columns(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "rows.csv"
    batch.write_text(
        "key,text,title,answer,source\n"
        "a1,What causes tides?,Tides,The Moon.,ticket-9\n"
        "a2,How high is Everest?,Everest,,ticket-10\n",
        encoding="utf-8",
    )
    code, _out, err = _cli(capsys, "batch", str(batch), "--db", db_url, "--create", "--json")
    assert code == 0, err
    rows = sync_rows(
        db_url, "select batch_key, title, given_answer, task_metadata from tasks order by batch_key"
    )
    assert [(r[0], r[1], r[2]) for r in rows] == [("a1", "Tides", "The Moon."), ("a2", "Everest", None)]
    meta = rows[0][3] if isinstance(rows[0][3], dict) else json.loads(rows[0][3])
    assert meta == {"source": "ticket-9"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"text": "ok"}\n{"title": "no text"}\n', 'rows.jsonl:2: a row needs a non-empty "text"'),
        ('{"text": "ok", "key": "k"}\n{"text": "again", "key": "k"}\n', "repeats the row on line 1"),
        ("not json\n", "rows.jsonl:1: not JSON"),
    ],
)
@pytest.mark.empty_workspace  # refused before the workspace is created
def test_a_bad_batch_file_is_refused_in_one_line_and_queues_nothing(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    batch = tmp_path / "rows.jsonl"
    batch.write_text(content, encoding="utf-8")
    code, _out, err = _cli(capsys, "batch", str(batch), "--db", sqlite_url, "--create")
    assert code == 4
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "workspace.sqlite3").exists()  # refused before the workspace was opened


def test_the_queue_filters_by_batch(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from core.domain.queue import QueueFilter
    from core.store import Store
    from core.tasks.queue import TaskQueue

    first = write_jsonl(tmp_path / "a.jsonl", 3, prefix="Alpha")
    second = write_jsonl(tmp_path / "b.jsonl", 2, prefix="Beta")
    ids = {}
    for path in (first, second):
        code, out, err = _cli(capsys, "batch", str(path), "--db", db_url, "--create", "--json")
        assert code == 0, err
        ids[path.name] = json.loads(out)["batch_id"]

    async def counts(batch_id: str | None) -> int:
        store = await Store.open(db_url)
        try:
            return sum((await TaskQueue(store).counts(QueueFilter(batch_id=batch_id))).values())
        finally:
            await store.close()

    assert asyncio.run(counts(ids["a.jsonl"])) == 3
    assert asyncio.run(counts(ids["b.jsonl"])) == 2
    assert asyncio.run(counts(None)) == 5
    code, out, err = _cli(capsys, "batches", "--db", db_url, "--json")
    assert code == 0, err
    assert sorted((b["total"], b["done"]) for b in json.loads(out)) == [(2, 0), (3, 0)]
