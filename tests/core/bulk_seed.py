"""Seed tasks awaiting a decision straight through the store (fast enough for 50 at a time)."""

from __future__ import annotations

from core.domain import TaskStatus
from core.store import Store


async def seed_reviewable(
    store: Store, n: int, *, status: TaskStatus = TaskStatus.AWAITING_FEEDBACK, prefix: str = "Task"
) -> list[str]:
    """``n`` tasks with one validated attempt each, resting in ``status``."""
    ids = []
    for i in range(n):
        task = await store.create_task(f"{prefix} {i:02d} text", title=f"{prefix} {i:02d}")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
        await store.update_attempt(
            attempt.id,
            final_output=f"Answer {i}",
            validation_status="accepted",
            state="finished",
            validation_score=0.9,
        )
        await store.add_validation(
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=1,
            result={"status": "accepted", "score": 0.9, "category": "none"},
            raw_response="{}",
            prompt=None,
            debug={"validator_model": "scripted/validator"},
        )
        await store.update_task(
            task.id,
            status=status,
            attempt_count=1,
            latest_validation_status="accepted",
            latest_score=0.9,
            latest_category="none",
        )
        ids.append(task.id)
    return ids
