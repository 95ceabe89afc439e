"""Judge calibration from the command line on a seeded workspace, every figure computed by hand.

Verdicts are seeded in the store (no model runs); every decision, undo, reopen, blind first
judgement and second review goes through ``evidence-desk``, as an analyst would type it.
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from core.cli.main import main as cli_main
from core.domain.status import TaskStatus
from core.store import Store

Z = 1.959963984540054


def wilson(k: int, n: int) -> tuple[float, float]:
    # Wilson (1927), written out again here so the test does not trust the module it checks.
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


async def _seed(url: str, verdicts: list[tuple[str, TaskStatus]]) -> list[str]:
    store = await Store.open(url)
    ids = []
    try:
        for i, (verdict, status) in enumerate(verdicts):
            task = await store.create_task(f"question {i}")
            attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
            await store.add_validation(
                task_id=task.id,
                attempt_id=attempt.id,
                attempt_index=1,
                result={"status": verdict, "score": 0.5, "category": "none"},
                raw_response="{}",
                prompt=None,
                debug={"validator_model": "judge-1", "warnings": [], "llm_calls": 2, "schema_retries": 1},
            )
            await store.update_task(task.id, expected_version=task.version, status=status)
            ids.append(task.id)
    finally:
        await store.close()
    return ids


class Cli:
    def __init__(self, url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
        self.url, self.capsys, self.monkeypatch = url, capsys, monkeypatch

    def __call__(self, who: str, *args: str) -> tuple[int, str, str]:
        self.monkeypatch.setenv("EVIDENCE_DESK_REVIEWER", who)
        self.capsys.readouterr()
        code = cli_main([*args, "--db", self.url])
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, who: str, *args: str) -> str:
        code, out, err = self(who, *args)
        assert code == 0, err
        return out


ACC, REJ = ("accepted", TaskStatus.AWAITING_FEEDBACK), ("rejected", TaskStatus.NEEDS_REVIEW)


def test_seeded_workspace_rates_anchoring_and_analysts(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # t0-t4 accepted+satisfied (a=5), t5-t6 accepted+abandoned, t7 accepted: abandon, undo,
    # satisfied... no: t7 accepted: satisfied, undo, then abandon (b=3 with t5, t6); t8 rejected
    # satisfied (c=1); t9-t11 rejected abandoned (d=3); t12 accepted abandoned then undone (no
    # decision stands); t13 rejected satisfied then reopened (no decision stands).
    ids = asyncio.run(_seed(sqlite_url, [ACC] * 8 + [REJ] * 4 + [ACC, REJ]))
    cli = Cli(sqlite_url, capsys, monkeypatch)

    # Blind first judgements before the reveal, then the decision (ana reviews blind).
    for t, blind in ((0, "satisfied"), (1, "abandon"), (5, "abandon"), (8, "abandon"), (9, "satisfied")):
        cli.ok("ana", "feedback", ids[t], blind, "--blind-first")
    code, _, err = cli("ana", "feedback", ids[0], "satisfied", "--blind-first")
    assert code == 3 and "already recorded a blind judgement" in err

    for t in range(5):
        cli.ok("ana", "feedback", ids[t], "satisfied")
    for t in (5, 6):
        cli.ok("ana", "feedback", ids[t], "abandon", "--reason", "wrong_fact")
    cli.ok("ana", "feedback", ids[7], "satisfied")
    cli.ok("ana", "undo", ids[7])
    cli.ok("ana", "feedback", ids[7], "abandon", "--reason", "missing_part")
    cli.ok("ana", "feedback", ids[8], "satisfied")
    for t in (9, 10, 11):
        cli.ok("ana", "feedback", ids[t], "abandon")
    cli.ok("ana", "feedback", ids[12], "abandon")
    cli.ok("ana", "undo", ids[12])
    cli.ok("ana", "feedback", ids[13], "satisfied")
    cli.ok("ana", "reopen", ids[13], "--reason", "the figures were wrong")

    # A bad reason is one line, exit 4, and nothing is recorded.
    code, _, err = cli("ana", "feedback", ids[12], "satisfied", "--reason", "vibes")
    assert code == 4 and err.count("\n") == 1 and "unknown reason 'vibes'" in err

    # Second reviews by bob (independent of ana's); ana cannot second-review her own decision.
    for t, second in ((0, "satisfied"), (1, "abandon"), (9, "abandon"), (5, "abandon")):
        cli.ok("bob", "second-review", ids[t], second)
    code, _, err = cli("ana", "second-review", ids[2], "satisfied")
    assert code == 3 and "needs another reviewer" in err

    cal = json.loads(cli.ok("ana", "calibration", "--json", "--cases"))
    a, b, c, d = 5, 3, 1, 3
    n = a + b + c + d
    assert cal["n"] == n == 12  # t12 (undone) and t13 (reopened) do not count
    rates = cal["rates"]
    assert rates["cells"] == {"true_accept": a, "false_accept": b, "false_reject": c, "true_reject": d}
    fa, fr = rates["false_accept"], rates["false_reject"]
    assert (fa["value"], fa["n"]) == (pytest.approx(3 / 6), 6)
    assert (fa["ci_low"], fa["ci_high"]) == pytest.approx(wilson(3, 6))
    assert (fr["value"], fr["n"]) == (pytest.approx(1 / 6), 6)
    assert (fr["ci_low"], fr["ci_high"]) == pytest.approx(wilson(1, 6))
    # p_o = 8/12, p_e = (8*6 + 4*6)/144 = 1/2: kappa = 1/3. AC1: pi = (8 + 6)/24 = 7/12,
    # p_e = 2 * 7/12 * 5/12 = 70/144: AC1 = (96 - 70)/(144 - 70) = 13/37.
    assert rates["kappa"] == pytest.approx(1 / 3)
    assert rates["gwet_ac1"] == pytest.approx(13 / 37)
    assert rates["prevalence"] == pytest.approx(6 / 12)
    assert rates["decisions"] == 12 and rates["too_few"] is True
    assert sorted(cal["cases"]["false_accept"]) == sorted([ids[5], ids[6], ids[7]])
    assert cal["cases"]["rejected/satisfied"] == [ids[8]]
    assert ids[12] not in json.dumps(cal["cases"]) and ids[13] not in json.dumps(cal["cases"])
    assert cal["reasons"]["wrong_fact"]["abandoned"] == 2 and cal["reasons"]["missing_part"]["abandoned"] == 1

    # Anchoring: 5 blind judgements; t0, t5 unchanged; t1 abandon -> satisfied on an accepted
    # verdict (toward the validator), t9 satisfied -> abandon on a rejected one (toward), t8
    # abandon -> satisfied on a rejected one (away). Changed 3 of 5.
    anch = cal["anchoring"]
    assert anch["judged"] == 5 and anch["changed"]["value"] == pytest.approx(3 / 5)
    assert (anch["changed"]["ci_low"], anch["changed"]["ci_high"]) == pytest.approx(wilson(3, 5))
    assert (anch["toward_validator"], anch["away_from_validator"], anch["other"]) == (2, 1, 0)

    # Analysts: pairs (ana, bob) = (s, s), (s, a), (a, a), (a, a): p_o = 3/4; first rater's
    # marginals 2 abandon / 2 satisfied, second's 3 / 1: p_e = (2*3 + 2*1)/16 = 1/2: kappa = 1/2.
    analysts = cal["analysts"]
    assert analysts["tasks"] == 4 and analysts["reviewers"] == 2
    assert analysts["kappa"] == pytest.approx(0.5) and analysts["agreement"] == pytest.approx(0.75)
    assert analysts["disagreements"] == [ids[1]]

    drift = cal["drift"]["judge-1"]
    (week,) = drift.values()
    assert week["verdicts"] == 14 and week["schema_failures_per_call"] == pytest.approx(0.5)
    assert (week["stuck_loops"], week["canned"], week["fallbacks"]) == (0, 0, 0)

    # Filters narrow every figure: bob decided nothing that stands; a reason picks its cases.
    assert json.loads(cli.ok("ana", "calibration", "--json", "--reviewer", "bob"))["n"] == 0
    only = json.loads(cli.ok("ana", "calibration", "--json", "--reason", "wrong_fact"))
    assert only["n"] == 2 and only["rates"]["cells"]["false_accept"] == 2
    text = cli.ok("ana", "calibration")
    assert "false accept" in text and "too few" in text


def test_reasons_lists_the_taxonomy_and_a_bad_file_is_one_line(
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: object,
) -> None:
    from pathlib import Path

    cli = Cli(sqlite_url, capsys, monkeypatch)
    codes = [r["code"] for r in json.loads(cli.ok("ana", "reasons", "--json"))]
    assert codes == [
        "wrong_fact", "missing_part", "unsupported_claim", "wrong_source", "format", "policy", "other"
    ]  # fmt: skip
    own = Path(str(tmp_path)) / "reasons.toml"
    own.write_text('[[reason]]\ncode = "stale"\ndescription = "Out of date"\n', encoding="utf-8")
    monkeypatch.setenv("EVIDENCE_DESK_REASONS", str(own))
    assert "1  stale  Out of date" in cli.ok("ana", "reasons")
    own.write_text('[[reason]]\ncode = "Bad Code"\n', encoding="utf-8")
    code, _, err = cli("ana", "reasons")
    assert code == 4 and err.count("\n") == 1 and "lower-case" in err


def test_html_and_text_show_the_same_rates(
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: object,
) -> None:
    from pathlib import Path

    ids = asyncio.run(_seed(sqlite_url, [ACC, ACC, REJ]))
    cli = Cli(sqlite_url, capsys, monkeypatch)
    cli.ok("ana", "feedback", ids[0], "satisfied")
    cli.ok("ana", "feedback", ids[1], "abandon")
    cli.ok("ana", "feedback", ids[2], "abandon")
    page = Path(str(tmp_path)) / "cal.html"
    text = cli.ok("ana", "calibration", "--html", str(page))
    html = page.read_text(encoding="utf-8")
    # false accept 1 of 2 (accepted, then abandoned), false reject 0 of 1: the same words in both
    line = next(x for x in text.splitlines() if x.startswith("false accept"))
    assert (
        line.startswith("false accept: 0.500 [") and "of 2" in line and "false reject: 0.000 [0.000" in line
    )
    assert line in html and "too few decisions" in html
    table = Path(str(tmp_path)) / "cal.csv"
    cli.ok("ana", "calibration", "--csv", str(table))
    assert "rates,false_accept,value,0.500\nrates,false_accept,ci_low," in table.read_text(encoding="utf-8")


def test_second_reviews_are_sampled_or_requested_and_leave_the_queue_once_given(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.tasks.judgements import sampled

    ids = asyncio.run(_seed(sqlite_url, [ACC] * 4))
    cli = Cli(sqlite_url, capsys, monkeypatch)
    for t in ids:
        cli.ok("ana", "feedback", t, "satisfied")

    def due(who: str) -> list[str]:
        return [d["task_id"] for d in json.loads(cli.ok(who, "second-review", "--due", "--json"))]

    assert due("bob") == []  # the default rate samples nothing
    assert "queued" in cli.ok("ana", "second-review", ids[2], "--request")
    code, _, err = cli("ana", "second-review", ids[2], "--request")
    assert code == 3 and "already queued" in err
    assert due("bob") == [ids[2]] and due("ana") == []  # never the reviewer who decided
    cli.ok("bob", "second-review", ids[2], "abandon")
    assert due("bob") == []
    monkeypatch.setenv("EVIDENCE_DESK_SECOND_REVIEW_RATE", "1")
    assert sorted(due("carol")) == sorted([ids[0], ids[1], ids[3]])
    code, _, err = cli("bob", "second-review", "--request")
    assert code == 2 and "needs TASK_ID" in err
    picked = sum(sampled(f"{i:032x}", 0.25) for i in range(2000))
    assert 400 < picked < 600  # a fixed hash sample: the same tasks every time, about the rate asked
    assert all(sampled(f"{i:032x}", 0.5) for i in range(2000) if sampled(f"{i:032x}", 0.25))
