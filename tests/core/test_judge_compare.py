"""compare_validators on both engines (SQLite and PostgreSQL): the JSON facts of live verdicts
(latency, cost, version, issues) are read inside the database."""

from __future__ import annotations

import pytest

from core.config import load_settings
from core.domain.event_codec import encode
from core.domain.event_payloads import ShadowVerdict
from core.domain.status import TaskStatus
from core.domain.validation import ValidationResult
from core.errors import InvalidRequest
from core.judge.compare import compare_validators, replay_names
from core.store import Store


async def test_compare_reads_live_and_shadow_verdicts(store: Store) -> None:
    shadow = await store.create_session(task_id=None, kind="shadow", label="strict@0123456789ab")
    pairs = [
        ("rejected", "accepted", "satisfied"),
        ("accepted", "rejected", "satisfied"),
        ("accepted", "accepted", "abandon"),
    ]
    for i, (live, candidate, action) in enumerate(pairs):
        task = await store.create_task(f"case {i}")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
        await store.add_validation(
            task_id=task.id, attempt_id=attempt.id, attempt_index=1,
            result={"status": live, "score": 0.5, "category": "none", "issues": [f"live {i}"]},
            raw_response="{}", prompt=None,
            debug={"latency_s": 0.5, "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0.002},
                   "validator_version": "aaaaaaaaaaaa"},
        )  # fmt: skip
        await store.add_feedback(
            task_id=task.id, attempt_id=attempt.id, action=action, prompt=None, note=None, reviewer="ana",
            from_status=TaskStatus.AWAITING_FEEDBACK, to_status=TaskStatus.CLOSED,
        )  # fmt: skip
        result = ValidationResult(status=candidate, score=0.7, issues=[f"cand {i}"])
        verdict = ShadowVerdict(
            result=result, status=result.status, attempt_index=1, attempt_id=attempt.id, latency_s=0.25,
            candidate="strict", task_id=task.id, validator_version="0123456789ab",
        )  # fmt: skip
        await store.append_event(shadow.id, *encode(verdict))
    settings = load_settings()
    c = await compare_validators(store, settings, "live", "strict@0123456789ab")
    assert c.paired == 3 and (c.current.agree, c.candidate.agree) == (1, 1)
    assert c.current.cost_usd_per_verdict == pytest.approx(0.002)
    assert c.current.latency_s_per_verdict == pytest.approx(0.5) and c.candidate.latency_s_per_verdict == 0.25
    assert (c.mcnemar.b, c.mcnemar.c) == (1, 1)
    assert c.candidate_right[0].current_issues == ["live 0"] and c.candidate_right[0].candidate_issues == [
        "cand 0"
    ]
    assert len(c.both_wrong) == 0 and len(c.current_right) == 1
    by_version = await compare_validators(store, settings, "aaaaaaaa", "0123456")
    assert by_version.paired == 3 and by_version.current.source == "live@aaaaaaaa"
    assert await replay_names(store) == ["live", "strict@0123456789ab"]
    with pytest.raises(InvalidRequest, match="no verdicts for 'nobody'"):
        await compare_validators(store, settings, "live", "nobody")


async def test_an_undone_decision_is_not_compared(store: Store) -> None:
    """compare-validators counts the decisions that stand, as calibration does: an undone decision
    (``core.domain.standing``) leaves its case out of the pairing."""
    shadow = await store.create_session(task_id=None, kind="shadow", label="strict@0123456789ab")
    for i, actions in enumerate((["satisfied"], ["satisfied", "undo"])):
        task = await store.create_task(f"case {i}")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
        await store.add_validation(
            task_id=task.id, attempt_id=attempt.id, attempt_index=1,
            result={"status": "accepted", "score": 0.9, "category": "none", "issues": []},
            raw_response="{}", prompt=None, debug={"validator_version": "aaaaaaaaaaaa"},
        )  # fmt: skip
        for action in actions:
            await store.add_feedback(
                task_id=task.id, attempt_id=attempt.id, action=action, prompt=None, note=None, reviewer="ana",
                from_status=TaskStatus.AWAITING_FEEDBACK, to_status=TaskStatus.CLOSED,
            )  # fmt: skip
        result = ValidationResult(status="accepted", score=0.9, issues=[])
        verdict = ShadowVerdict(
            result=result, status=result.status, attempt_index=1, attempt_id=attempt.id, latency_s=0.25,
            candidate="strict", task_id=task.id, validator_version="0123456789ab",
        )  # fmt: skip
        await store.append_event(shadow.id, *encode(verdict))
    c = await compare_validators(store, load_settings(), "live", "strict@0123456789ab")
    assert c.paired == 1
