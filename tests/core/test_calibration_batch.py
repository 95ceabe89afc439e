"""Calibration narrowed to one batch: exact matrices on a seeded workspace with two batches."""

from __future__ import annotations

import pytest

from core.calibration import CalibrationFilter, calibrate, calibration_batches
from core.domain.status import TaskStatus
from core.store import Store
from core.store.batches import BatchItem, BatchRepository
from core.tasks.override import record_override


async def decide(
    store: Store, task_id: str, status: str | None, action: str | None, *, override: bool = False
) -> None:
    attempt = await store.create_attempt(task_id, 1, trigger="initial", prompt="p")
    if status is not None:
        await store.add_validation(
            task_id=task_id,
            attempt_id=attempt.id,
            attempt_index=1,
            result={"status": status, "score": 0.5, "category": "none"},
            raw_response="{}",
            prompt=None,
            debug={"validator_model": "m1", "warnings": []},
        )
    if action is not None:
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
    if override:
        await record_override(
            store, task_id, status="rejected", category="goal_missed", note="n", reviewer="ana"
        )


async def queue(store: Store, batch_id: str, decisions: list[tuple[str | None, str | None, bool]]) -> None:
    items = [BatchItem(key=f"row-{i}", text=f"{batch_id} question {i}") for i in range(len(decisions))]
    result = await BatchRepository(store).queue(batch_id, f"{batch_id}.csv", items)
    for task_id, (status, action, override) in zip(result.task_ids, decisions, strict=True):
        await decide(store, task_id, status, action, override=override)


async def test_a_batch_filter_counts_only_that_batchs_tasks(store: Store) -> None:
    await queue(
        store,
        "north",
        [
            ("accepted", "satisfied", False),
            ("accepted", "satisfied", False),
            ("accepted", "revise", False),
            ("rejected", "satisfied", False),
            ("accepted", None, True),  # overridden
        ],
    )
    await queue(
        store,
        "south",
        [
            ("rejected", "revise", False),
            ("rejected", "abandon", False),
            ("insufficient_evidence", "abandon", False),
            (None, "satisfied", False),
        ],
    )
    loose = await store.create_task("not in any batch")
    await decide(store, loose.id, "accepted", "satisfied")

    assert await calibration_batches(store) == [("north", "north.csv"), ("south", "south.csv")]
    zero = {"satisfied": 0, "revised": 0, "abandoned": 0, "overridden": 0}

    north = await calibrate(store, CalibrationFilter(batch_id="north"))
    assert north.n == 5
    assert north.matrix == {
        "accepted": {"satisfied": 2, "revised": 1, "abandoned": 0, "overridden": 1},
        "rejected": {**zero, "satisfied": 1},
        "insufficient_evidence": zero,
        "validator_error": zero,
        "unvalidated": zero,
    }
    # a=2 b=2 c=1 d=0: p_o = 2/5, p_e = (4*3 + 1*2)/25 = 14/25, kappa = (10/25 - 14/25) / (11/25)
    assert north.kappa == pytest.approx(-4 / 11)

    south = await calibrate(store, CalibrationFilter(batch_id="south"))
    assert south.n == 4
    assert south.matrix == {
        "accepted": zero,
        "rejected": {**zero, "revised": 1, "abandoned": 1},
        "insufficient_evidence": {**zero, "abandoned": 1},
        "validator_error": zero,
        "unvalidated": {**zero, "satisfied": 1},
    }
    assert south.kappa == pytest.approx(0.0)  # never accepted: only chance agreement

    everything = await calibrate(store)
    assert everything.n == 10  # both batches and the loose task

    with pytest.raises(ValueError, match="no batch 'west'"):
        await calibrate(store, CalibrationFilter(batch_id="west"))
