"""``evidence-desk decisions`` through the real command line: CSV, JSONL, filters, bad input."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path

from core.exports.decisions import COLUMNS
from core.store import Store
from tests.core.bulk_seed import seed_reviewable
from tests.integration.conftest import Desk


async def _seed(db: Path) -> list[str]:
    store = await Store.open(str(db))
    try:
        ids = await seed_reviewable(store, 2)
        for task_id, reviewer in zip(ids, ("ana", "bo"), strict=True):
            attempt = (await store.list_attempts(task_id))[0]
            await store.add_feedback(
                task_id=task_id,
                attempt_id=attempt.id,
                action="satisfied",
                prompt=None,
                note=f"=1+1 by {reviewer}",
                reviewer=reviewer,
                from_status=(await store.get_task(task_id)).status,
                to_status=(await store.get_task(task_id)).status,
            )
        return ids
    finally:
        await store.close()


def test_decisions_csv_jsonl_filters_and_bad_input(desk: Desk, tmp_path: Path) -> None:
    desk.script([{"model": "unused", "turns": [{"content": "no model is called"}]}])
    ids = asyncio.run(_seed(desk.db))
    code, out, err = desk.cli("decisions")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    assert [r["task_id"] for r in rows] == ids and rows[0]["note"] == "'=1+1 by ana"
    assert tuple(rows[0]) == COLUMNS

    out_file = tmp_path / "d.jsonl"
    code, _, err = desk.cli("decisions", "--jsonl", str(out_file), "--reviewer", "bo")
    assert code == 0 and "1 decision(s) on 1 task(s)" in err
    (line,) = out_file.read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["task_id"] == ids[1] and json.loads(line)["note"] == "=1+1 by bo"

    csv_file = tmp_path / "d.csv"
    code, _, err = desk.cli(
        "decisions", "--csv", str(csv_file), "--task", ids[0][:10], "--status", "awaiting_feedback"
    )
    assert code == 0, err
    with csv_file.open(encoding="utf-8", newline="") as fh:
        assert [r["reviewer"] for r in csv.DictReader(fh)] == ["ana"]

    before = desk.dump()
    code, _, err = desk.cli("decisions", "--status", "done")
    assert code == 4 and "unknown status 'done'" in err and len(err.strip().splitlines()) == 1
    code, _, err = desk.cli("decisions", "--since", "yesterday")
    assert code == 4 and "is not a date" in err
    assert desk.dump() == before
