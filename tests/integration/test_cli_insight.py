"""``diff``, ``override``, ``calibration`` and ``show`` through the real command line."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

from core.domain.status import TaskStatus
from core.store import Store
from tests.integration.conftest import Desk


async def _seed(db: Path) -> str:
    store = await Store.open(str(db))
    try:
        task = await store.create_task("How high is Everest?")
        for index, answer, status in ((1, "It is 8,848 m", "rejected"), (2, "It is 8,849 m", "accepted")):
            attempt = await store.create_attempt(
                task.id, index, trigger="initial" if index == 1 else "revision", prompt=f"prompt {index}"
            )
            await store.update_attempt(attempt.id, final_output=answer)
            await store.add_validation(
                task_id=task.id,
                attempt_id=attempt.id,
                attempt_index=index,
                result={"status": status, "score": 0.5, "issues": [f"issue {index}"]},
                raw_response="{}",
                prompt=None,
                debug={"validator_model": "scripted/judge"},
            )
            await store.add_feedback(
                task_id=task.id,
                attempt_id=attempt.id,
                action="revise" if index == 1 else "satisfied",
                prompt=None,
                note=None,
                reviewer="ana",
                from_status=TaskStatus.AWAITING_FEEDBACK,
                to_status=TaskStatus.CLOSED,
            )
        return task.id
    finally:
        await store.close()


def test_diff_override_show_and_calibration(desk: Desk, tmp_path: Path) -> None:
    desk.script([{"model": "unused", "turns": [{"content": "no model is called"}]}])
    task_id = asyncio.run(_seed(desk.db))
    code, out, err = desk.cli("diff", task_id[:10])
    assert code == 0, err
    assert "It is [-8,848-] {+8,849+} m" in out and "revision prompt: prompt 2" in out
    assert "+ issue: issue 2" in out and "- issue: issue 1" in out
    assert desk.cli_json("diff", task_id, "--a", "1", "--b", "2")["words_added"] == ["8,849"]

    before = desk.dump()
    code, _, err = desk.cli("override", task_id, "--status", "maybe")
    assert code == 4 and "unknown status 'maybe'" in err and len(err.strip().splitlines()) == 1
    code, _, err = desk.cli("diff", task_id, "--a", "1", "--b", "9")
    assert code == 4 and "has no attempt 9" in err
    assert desk.dump() == before

    code, out, err = desk.cli(
        "override", task_id, "--status", "rejected", "--category", "incomplete", "--note", "height unsourced"
    )
    assert code == 0, err
    shown = desk.cli_json("show", task_id)
    assert shown["validations"][-1]["status"] == "accepted"  # the judge's verdict is kept
    (mine,) = shown["analyst_verdicts"]
    assert (mine["attempt_index"], mine["status"], mine["note"]) == (2, "rejected", "height unsourced")
    code, out, _ = desk.cli("show", task_id)
    assert "Validation of attempt 2: accepted" in out and "Analyst verdict on attempt 2" in out

    page = tmp_path / "report.html"
    code, _, err = desk.cli("report", task_id, "-o", str(page))
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "Analyst&#39;s verdict" in html or "Analyst's verdict" in html
    assert "height unsourced" in html and 'class="verdict v-accepted"' in html  # both verdicts

    bundle = tmp_path / "case.edbundle"
    code, _, err = desk.cli("export", task_id, "-o", str(bundle))
    assert code == 0, err
    from_bundle = tmp_path / "from-bundle.html"
    code, _, err = desk.cli("report", task_id, "--bundle", str(bundle), "-o", str(from_bundle))
    assert code == 0, err
    html = from_bundle.read_text(encoding="utf-8")
    assert "height unsourced" in html and 'class="verdict v-accepted"' in html  # both travel in a bundle

    out_csv = tmp_path / "cal.csv"
    out_html = tmp_path / "cal.html"
    cal = desk.cli_json("calibration", "--csv", str(out_csv), "--html", str(out_html))
    page_text = out_html.read_text(encoding="utf-8")
    assert "2 decided attempts" in page_text and "scripted/judge" in page_text
    assert cal["n"] == 2
    assert cal["matrix"]["rejected"]["revised"] == 1 and cal["matrix"]["accepted"]["overridden"] == 1
    rows = list(csv.reader(out_csv.read_text(encoding="utf-8").splitlines()))
    assert ["matrix", "accepted", "overridden", "1"] in rows
    code, _, err = desk.cli("calibration", "--since", "yesterday")
    assert code == 4 and "not a date" in err
    code, _, err = desk.cli("calibration", "--csv", str(tmp_path / "missing" / "x.csv"))
    assert code == 4 and "cannot write" in err


async def _seed_batches(db: Path) -> None:
    from core.store.batches import BatchItem, BatchRepository

    store = await Store.open(str(db))
    try:
        for batch_id, actions in (("north", ["satisfied", "revise"]), ("south", ["abandon"])):
            items = [BatchItem(key=str(i), text=f"{batch_id} {i}") for i in range(len(actions))]
            result = await BatchRepository(store).queue(batch_id, f"{batch_id}.csv", items)
            for task_id, action in zip(result.task_ids, actions, strict=True):
                attempt = await store.create_attempt(task_id, 1, trigger="initial", prompt="p")
                await store.add_validation(
                    task_id=task_id,
                    attempt_id=attempt.id,
                    attempt_index=1,
                    result={"status": "accepted", "score": 0.9},
                    raw_response="{}",
                    prompt=None,
                    debug={"validator_model": "scripted/judge"},
                )
                await store.add_feedback(
                    task_id=task_id,
                    attempt_id=attempt.id,
                    action=action,
                    prompt=None,
                    note=None,
                    reviewer="ana",
                    from_status=TaskStatus.AWAITING_FEEDBACK,
                    to_status=TaskStatus.CLOSED,
                )
    finally:
        await store.close()


def test_calibration_by_batch(desk: Desk) -> None:
    desk.script([{"model": "unused", "turns": [{"content": "no model is called"}]}])
    asyncio.run(_seed_batches(desk.db))
    north = desk.cli_json("calibration", "--batch", "north")
    assert north["n"] == 2 and north["filter"]["batch_id"] == "north"
    assert north["matrix"]["accepted"] == {"satisfied": 1, "revised": 1, "abandoned": 0, "overridden": 0}
    south = desk.cli_json("calibration", "--batch", "south")
    assert south["matrix"]["accepted"] == {"satisfied": 0, "revised": 0, "abandoned": 1, "overridden": 0}
    assert desk.cli_json("calibration")["n"] == 3
    code, _, err = desk.cli("calibration", "--batch", "west")
    assert code == 4 and "no batch 'west'" in err and len(err.strip().splitlines()) == 1
