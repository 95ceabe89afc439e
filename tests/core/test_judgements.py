"""Blind first judgements and second reviews through core, on both engines: what is refused, and
what calibration makes of them (anchoring, analysts' agreement, the second-review queue)."""

from __future__ import annotations

import pytest

from core.calibration import calibrate
from core.domain.status import TaskStatus
from core.errors import RefusedAction
from core.store import Store
from core.tasks.judgements import record_judgement, request_second_review, second_reviews_due
from tests.core.conftest import ScriptFactory


async def _awaiting(store: Store, verdict: str) -> str:
    task = await store.create_task(f"verdict {verdict}")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    await store.add_validation(
        task_id=task.id, attempt_id=attempt.id, attempt_index=1, result={"status": verdict, "score": 0.5},
        raw_response="{}", prompt=None, debug={"validator_model": "m1"},
    )  # fmt: skip
    await store.update_task(task.id, expected_version=task.version, status=TaskStatus.AWAITING_FEEDBACK)
    return task.id


async def _decide(store: Store, task_id: str, action: str, who: str) -> None:
    (attempt,) = await store.list_attempts(task_id)
    await store.add_feedback(
        task_id=task_id, attempt_id=attempt.id, action=action, prompt=None, note=None, reviewer=who,
        from_status=TaskStatus.AWAITING_FEEDBACK, to_status=TaskStatus.CLOSED,
    )  # fmt: skip
    task = await store.get_task(task_id)
    await store.update_task(task_id, expected_version=task.version, status=TaskStatus.CLOSED)


async def test_blind_and_second_judgements_feed_anchoring_and_analysts(
    store: Store, make_settings: ScriptFactory
) -> None:
    settings = make_settings()
    one, two = await _awaiting(store, "accepted"), await _awaiting(store, "rejected")
    await record_judgement(store, settings, one, "abandon", phase="blind", reviewer="ana")
    await record_judgement(store, settings, two, "abandon", phase="blind", reviewer="ana")
    with pytest.raises(RefusedAction, match="already recorded a blind judgement"):
        await record_judgement(store, settings, one, "satisfied", phase="blind", reviewer="ana")
    with pytest.raises(RefusedAction, match="no decision standing"):
        await record_judgement(store, settings, one, "satisfied", phase="second", reviewer="bob")
    await _decide(store, one, "satisfied", "ana")  # changed toward the accepted verdict
    await _decide(store, two, "abandon", "ana")  # kept
    with pytest.raises(RefusedAction, match="closed: a blind judgement is recorded before"):
        await record_judgement(store, settings, one, "satisfied", phase="blind", reviewer="ana")
    assert await request_second_review(store, one, reviewer="ana") == 1
    assert [d.task_id for d in await second_reviews_due(store, settings, "bob")] == [one]
    await record_judgement(store, settings, one, "abandon", phase="second", reviewer="bob")
    await record_judgement(store, settings, two, "abandon", phase="second", reviewer="bob")
    assert await second_reviews_due(store, settings, "bob") == []

    cal = await calibrate(store)
    assert cal.anchoring is not None and cal.anchoring.judged == 2
    assert cal.anchoring.changed.value == pytest.approx(0.5) and cal.anchoring.toward_validator == 1
    assert cal.analysts is not None and cal.analysts.tasks == 2 and cal.analysts.disagreements == [one]
    assert cal.analysts.agreement == pytest.approx(0.5)
    only_bob = await calibrate(store, cal.filter.model_copy(update={"reviewer": "bob"}))
    assert only_bob.n == 0 and only_bob.anchoring is None
