"""Shadow replay and comparison through the command line: 40 decided tasks, a scripted candidate
that disagrees with the live validator on known cases, a replay killed mid-run and resumed.

Live validator (analyst endorses cases 00-29, abandons 30-39):
  rejected 00-05 and 34-39, insufficient_evidence 29, accepted the rest  -> right on 29 of 40
Candidate:
  rejected 00, 01, 06, 29 and 31-39, accepted the rest                     -> right on 35 of 40
Discordant pairs: live right only on 06 (b = 1); candidate right only on 02-05 and 31-33 (c = 7).
Both wrong with different verdicts: 29 (insufficient_evidence against rejected).
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

import pytest

from tests import zygote
from tests.integration.conftest import ROOT, Desk, verdict
from tests.zygote import ZygoteProcess

REJECT = verdict("rejected", 0.1, category="goal_missed", issues=["not supported"])
ACCEPT = verdict("accepted", 0.9)
UNSURE = verdict("insufficient_evidence", 0.3)
CANDIDATES = json.dumps({"strict": {"model": "scripted/candidate"}})
CASES = 40


def _case(pattern: str) -> str:
    return rf"\[\[case ({pattern})\]\]"


def live_conversations() -> list[dict[str, Any]]:
    return [
        {"model": "validator", "match": _case("0[0-5]|3[4-9]"), "turns": [{"content": REJECT}]},
        {"model": "validator", "match": _case("29"), "turns": [{"content": UNSURE}]},
        {"model": "validator", "turns": [{"content": ACCEPT}]},
    ]


def candidate_conversations(*, slow_after_case_09: bool = False) -> list[dict[str, Any]]:
    if slow_after_case_09:  # cases 00-09 as usual, then a reply that never comes in time
        return [
            {"model": "candidate", "match": _case("0[016]"), "turns": [{"content": REJECT}]},
            {"model": "candidate", "match": _case("0[0-9]"), "turns": [{"content": ACCEPT}]},
            {"model": "candidate", "turns": [{"content": ACCEPT, "delay_s": 120}]},
        ]
    return [
        {"model": "candidate", "match": _case("0[016]|29|3[1-9]"), "turns": [{"content": REJECT}]},
        {"model": "candidate", "turns": [{"content": ACCEPT}]},
    ]


def _decided_workspace(desk: Desk) -> dict[int, str]:
    """40 validate-only tasks judged by the live validator, then decided by an analyst."""
    desk.script(live_conversations() + candidate_conversations())
    rows = desk.root / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps(
                {
                    "key": f"c{i:02d}",
                    "text": f"[[case {i:02d}]] Is fact {i} true?",
                    "answer": f"Fact {i} holds.",
                }
            )
            + "\n"
            for i in range(CASES)
        ),
        encoding="utf-8",
    )
    code, _, err = desk.cli("batch", str(rows))
    assert code == 0, err
    code, _, err = desk.cli("worker", "--once")
    assert code == 0, err
    ids = {int(key[1:]): task_id for key, task_id in desk.rows("select batch_key, id from tasks")}
    for i in range(CASES):  # in case order: the replay takes the oldest decisions first
        code, _, err = desk.cli("feedback", ids[i], "satisfied" if i < 30 else "abandon")
        assert code == 0, err
    return ids


def _task_state(desk: Desk) -> tuple[Any, ...]:
    tasks = desk.rows(
        "select id, status, version, updated_at, validation_outcome, latest_validation_status, attempt_count "
        "from tasks order by id"
    )
    queue = [t["id"] for t in desk.cli_json("list")]
    counts = desk.rows(
        "select (select count(*) from validations), (select count(*) from feedback), "
        "(select count(*) from events where task_id is not null), (select count(*) from attempts)"
    )
    return tasks, queue, counts


def _shadow_events(desk: Desk) -> list[tuple[int, str]]:
    rows = desk.rows("select id, payload from events where kind = 'shadow_verdict_recorded' order by id")
    return [(int(i), json.loads(p)["attempt_id"]) for i, p in rows]


def _wait_for_shadow_verdicts(desk: Desk, at_least: int, child: ZygoteProcess) -> None:
    """Until the child has committed ``at_least`` shadow verdicts (polled from the database)."""
    deadline = time.monotonic() + 120
    while len(_shadow_events(desk)) < at_least:
        assert child.poll() is None, "the replay ended before it was killed"
        assert time.monotonic() < deadline, "the replay never stored its first verdicts"
        time.sleep(0.05)


def test_revalidate_killed_and_resumed_then_compared(desk: Desk) -> None:
    ids = _decided_workspace(desk)
    before = _task_state(desk)
    desk.env(validator_candidates=CANDIDATES)

    slow = desk.root / "slow.json"
    slow.write_text(
        json.dumps({"conversations": candidate_conversations(slow_after_case_09=True)}), encoding="utf-8"
    )
    argv = ["-m", "core.cli", "revalidate", "--candidate", "strict", "--concurrency", "1"]
    argv += ["--db", str(desk.db), "--script", str(slow), "--corpus", str(desk.root / "corpus")]
    child = zygote.spawn(
        argv, {**os.environ, "PYTHONPATH": str(ROOT)}, stdout=zygote.DEVNULL, stderr=zygote.PIPE
    )
    try:
        _wait_for_shadow_verdicts(desk, 10, child)
        child.send_signal(signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    first = _shadow_events(desk)
    assert len(first) == 10  # case 10's verdict was still on its way

    summary = desk.cli_json("revalidate", "--candidate", "strict")
    assert summary["selected"] == CASES and summary["already_done"] == 10 and summary["judged"] == 30
    events = _shadow_events(desk)
    assert len(events) == CASES and len({a for _, a in events}) == CASES  # complete, no duplicates
    assert events[:10] == first  # the ten done before the kill were kept, not judged again
    assert desk.cli_json("revalidate", "--candidate", "strict")["judged"] == 0  # nothing left
    assert _task_state(desk) == before  # no task moved, no verdict, no event on a task, same queue

    c = desk.cli_json("compare-validators", "live", "strict")
    assert c["paired"] == CASES
    assert (c["current"]["agree"], c["current"]["judged"]) == (29, 40)
    assert (c["candidate"]["agree"], c["candidate"]["judged"]) == (35, 40)
    assert c["current"]["agreement"] == pytest.approx(0.725)
    assert c["candidate"]["interval"] == [pytest.approx(0.7389, abs=1e-4), pytest.approx(0.9454, abs=1e-4)]
    m = c["mcnemar"]
    assert (m["b"], m["c"], m["method"]) == (1, 7, "exact-binomial")
    assert m["statistic"] == pytest.approx(25 / 8) and m["p_value"] == pytest.approx(18 / 256)

    def cases(group: str) -> list[str]:
        return sorted(x["task_id"] for x in c[group])

    assert cases("candidate_right") == sorted(ids[i] for i in (2, 3, 4, 5, 31, 32, 33))
    assert cases("current_right") == [ids[6]]
    assert cases("both_wrong") == [ids[29]]
    assert c["candidate"]["latency_s_per_verdict"] is not None and c["candidate"]["errors"] == 0

    code, out, _ = desk.cli("compare-validators", "live", "strict")
    assert code == 0 and "statistic 3.125" in out and "candidate right (7)" in out


def test_revalidate_refuses_bad_input_and_changes_nothing(desk: Desk) -> None:
    desk.script(live_conversations())
    desk.env(validator_candidates=CANDIDATES)
    assert desk.cli("list")[0] == 0  # the workspace exists: what follows must leave it as it is
    code, _, err = desk.cli("revalidate", "--candidate", "nobody")
    assert code == 4 and "no candidate validator 'nobody'" in err and "strict" in err
    before = desk.dump()
    code, _, err = desk.cli("revalidate", "--candidate", "strict", "--tasks", "ffffffffff")
    assert code == 4 and err.count("\n") == 1
    code, _, err = desk.cli("revalidate", "--candidate", "strict", "--limit", "0")
    assert code == 4 and "--limit" in err
    code, _, err = desk.cli("compare-validators", "live", "strict")
    assert code == 4 and "no verdicts for 'strict'" in err
    assert desk.dump() == before


def test_revalidate_honours_provider_faults_like_live_validation(desk: Desk) -> None:
    """A transient fault is retried (the verdict comes); a permanent one fails open into a
    validator_error shadow verdict, as a live verdict would, and the replay goes on."""
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides come from the Moon's gravity."}]},
            {"model": "validator", "turns": [{"content": ACCEPT}]},
            {
                "model": "candidate",
                "match": "flaky",
                "turns": [{"error": "rate_limit", "fail_times": 1, "content": ACCEPT}],
            },
            {"model": "candidate", "match": "broken", "turns": [{"error": "bad_request"}]},
        ]
    )
    desk.env(validator_candidates=CANDIDATES, llm_num_retries=2)
    for text in ("flaky: what causes tides?", "broken: what causes tides?"):
        task = desk.cli_json("run", text)
        assert desk.cli("feedback", task["id"], "satisfied")[0] == 0
    summary = desk.cli_json("revalidate", "--candidate", "strict")
    assert summary["judged"] == 2 and summary["statuses"] == {"accepted": 1, "validator_error": 1}
    c = desk.cli_json("compare-validators", "live", "strict")
    assert c["candidate"]["errors"] == 1 and c["current"]["errors"] == 0
    assert desk.rows("select count(*) from validations") == [(2,)]  # the live verdicts only
