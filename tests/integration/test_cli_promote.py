"""Promoting a replayed candidate: one recorded event, the next live verdict is the candidate's, and
calibration shows the change point."""

from __future__ import annotations

import json

from tests.integration.conftest import Desk, verdict

CANDIDATES = json.dumps(
    {"strict": {"model": "scripted/candidate", "temperature": 0.0}, "unseen": {"model": "scripted/x"}}
)


def test_promote_records_one_event_and_the_next_verdict_is_the_candidates(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides come from the Moon's gravity."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
            {"model": "candidate", "turns": [{"content": verdict("accepted", 0.8)}]},
        ]
    )
    desk.env(validator_candidates=CANDIDATES, reviewer="ana")
    first = desk.cli_json("run", "What causes tides?")
    assert desk.cli("feedback", first["id"], "satisfied")[0] == 0
    before = desk.cli_json("validator-prompt", "list")["validator_version"]

    code, _, err = desk.cli("promote-validator", "strict")
    assert code == 4 and "no verdicts for 'strict'" in err  # never replayed: no comparison to rest on
    assert desk.cli_json("revalidate", "--candidate", "strict")["judged"] == 1
    promoted = desk.cli_json("promote-validator", "strict")
    assert promoted["reviewer"] == "ana" and promoted["previous_version"] == before
    assert promoted["comparison"]["paired"] == 1 and promoted["profile"]["model"] == "scripted/candidate"
    assert desk.rows("select count(*) from events where kind = 'validator_promoted'") == [(1,)]
    code, _, err = desk.cli("promote-validator", "strict")
    assert code == 4 and "already the workspace's validator" in err

    second = desk.cli_json("run", "What causes tides, once more?")
    ((debug,),) = desk.rows("select debug from validations where task_id = ?", second["id"])
    debug = json.loads(debug)
    assert debug["validator_model"] == "scripted/candidate"
    assert debug["validator_version"] == promoted["validator_version"] != before

    cal = desk.cli_json("calibration")
    (change,) = cal["change_points"]
    assert (change["previous_version"], change["validator_version"], change["reviewer"]) == (
        before,
        promoted["validator_version"],
        "ana",
    )
    code, out, _ = desk.cli("calibration")
    assert f"{before} -> {promoted['validator_version']} (strict, by ana)" in out

    back = desk.cli_json("promote-validator", "configured")
    assert back["validator_version"] == before
    third = desk.cli_json("run", "What causes tides, the last time?")
    ((debug,),) = desk.rows("select debug from validations where task_id = ?", third["id"])
    assert json.loads(debug)["validator_version"] == before
