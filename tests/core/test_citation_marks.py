"""Citation feedback from the command line: each mark an event, the latest on a citation standing,
and calibration's citation precision per validator model and version computed by hand here.

Verdicts (with their citations) are seeded in the store; every mark goes through ``evidence-desk``.
Both engines: the standing mark is picked and counted by SQL reading the events' JSON.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from core.domain.facts import EventKind
from core.domain.status import TaskStatus
from core.store import Store

Z = 1.959963984540054


def wilson(k: int, n: int) -> tuple[float, float]:
    # Written out again so the test does not trust the module it checks.
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


def _cite(i: int) -> dict[str, str]:
    return {"claim": f"claim {i}", "evidence_id": f"E{i}", "quote": f"quote {i}", "verdict": "supported"}


# (validator model, version, cited, status the task is in)
SEEDS = [
    ("judge-1", "v1aaaa", 3, TaskStatus.AWAITING_FEEDBACK),
    ("judge-1", "v1aaaa", 2, TaskStatus.NEEDS_REVIEW),
    ("judge-2", "v2bbbb", 2, TaskStatus.CLOSED),
    ("judge-2", "v2bbbb", 1, TaskStatus.RUNNING),  # no runner: the CLI's recovery fails it; not markable
]


async def _seed(url: str) -> list[str]:
    store = await Store.open(url)
    ids = []
    try:
        for i, (model, version, cited, status) in enumerate(SEEDS):
            task = await store.create_task(f"question {i}")
            attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
            await store.add_validation(
                task_id=task.id, attempt_id=attempt.id, attempt_index=1,
                result={"status": "accepted", "score": 0.9, "category": "none",
                        "citations": [_cite(c + 1) for c in range(cited)]},
                raw_response="{}", prompt=None,
                debug={"validator_model": model, "validator_version": version, "warnings": []},
            )  # fmt: skip
            await store.update_task(task.id, expected_version=task.version, status=status)
            ids.append(task.id)
    finally:
        await store.close()
    return ids


async def _marks(url: str, ids: list[str]) -> int:
    store = await Store.open(url)
    try:
        return sum([len(await store.get_task_events(t, kinds=[EventKind.CITATION_MARKED])) for t in ids])
    finally:
        await store.close()


def test_marks_stand_latest_first_and_give_citation_precision_per_model_and_version(
    db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ids = asyncio.run(_seed(db_url))
    monkeypatch.setenv("EVIDENCE_DESK_REVIEWER", "ana")

    def cli(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli_main([*args, "--db", db_url])
        out, err = capsys.readouterr()
        return code, out, err

    def ok(*args: str) -> str:
        code, out, err = cli(*args)
        assert code == 0, err
        return out

    # `show` numbers the citations as `citation` names them.
    shown = ok("show", ids[0])
    assert "1. E1 (supported, unchecked): claim 1" in shown and "3. E3" in shown

    # judge-1 @ v1aaaa: t0 1 right, 2 wrong then right (the later mark stands), 3 right; t1 1 wrong, 2 right.
    for task, n, mark in (
        (0, 1, "right"),
        (0, 2, "wrong"),
        (0, 3, "right"),
        (0, 2, "right"),
        (1, 1, "wrong"),
    ):
        ok("citation", ids[task], str(n), mark)
    marked = json.loads(ok("citation", ids[1], "2", "right", "--json"))
    assert (marked["evidence_id"], marked["mark"], marked["validator_version"]) == ("E2", "right", "v1aaaa")
    # judge-2 @ v2bbbb, on a decided task: both wrong (bob marks; the reviewer filter sees it).
    for n in (1, 2):
        ok("citation", ids[2], str(n), "wrong", "--reviewer", "bob")
    events = asyncio.run(_marks(db_url, ids))
    assert events == 8  # every mark is an event; nothing edited

    # Bad input: one line, a clear code, nothing written.
    code, _, err = cli("citation", ids[0], "4", "right")
    assert code == 4 and "has 3 citation(s); there is no citation 4" in err and err.count("\n") == 1
    code, _, err = cli("citation", ids[0], "0", "right")
    assert code == 2 and "counts from 1" in err
    code, _, err = cli("citation", ids[3], "1", "right")
    assert code == 3 and "citations are marked on a task awaiting a decision or decided" in err
    code, _, err = cli("citation", ids[0], "1", "right", "--attempt", "7")
    assert code == 4 and "no attempt 7" in err
    assert asyncio.run(_marks(db_url, ids)) == events

    cal = json.loads(ok("calibration", "--json"))
    c = cal["citations"]
    assert c["marked"] == 7 and c["precision"]["value"] == pytest.approx(4 / 7)
    by = {(v["validator_model"], v["validator_version"]): v for v in c["by_validator"]}
    assert set(by) == {("judge-1", "v1aaaa"), ("judge-2", "v2bbbb")}
    one, two = by[("judge-1", "v1aaaa")], by[("judge-2", "v2bbbb")]
    assert (one["right"], one["wrong"], two["right"], two["wrong"]) == (4, 1, 0, 2)
    low, high = wilson(4, 5)
    assert one["precision"] == {
        "value": 0.8,
        "ci_low": pytest.approx(low),
        "ci_high": pytest.approx(high),
        "n": 5,
    }
    low, high = wilson(0, 2)
    assert two["precision"]["value"] == 0 and two["precision"]["ci_high"] == pytest.approx(high)

    narrowed = json.loads(ok("calibration", "--json", "--validator-version", "v2"))["citations"]
    assert [v["validator_model"] for v in narrowed["by_validator"]] == ["judge-2"]
    assert json.loads(ok("calibration", "--json", "--reviewer", "ana"))["citations"]["marked"] == 5
    assert json.loads(ok("calibration", "--json", "--validator-model", "judge-9"))["citations"] is None
    assert json.loads(ok("calibration", "--json", "--category", "none"))["citations"]["marked"] == 7
    assert json.loads(ok("calibration", "--json", "--category", "goal_missed"))["citations"] is None

    page = tmp_path / "cal.html"
    text = ok("calibration", "--html", str(page))
    assert "judge-1 @ v1aaaa: 4 right, 1 wrong; precision: 0.800" in text
    html = page.read_text(encoding="utf-8")
    assert "Citation precision" in html and "<td>v2bbbb</td><td>0</td><td>2</td>" in html
