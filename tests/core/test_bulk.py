"""Bulk decisions (issue 19, point 6): one decision and one event per task, skips named, cancel exact."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.domain import FeedbackAction, TaskStatus
from core.domain.facts import EventKind
from core.tasks.bulk import BulkAction, BulkProgress, Cancellation, plan_bulk, run_bulk
from core.tasks.claims import Claims
from core.tasks.review import ReviewService
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.core.bulk_seed import seed_reviewable
from tests.core.conftest import ScriptFactory


async def _review(make_settings: ScriptFactory, db_url: str) -> tuple[Workspace, ReviewService]:
    settings = make_settings(
        [{"model": "agent", "turns": [{"content": "unused"}]}], db_url=db_url, reviewer="ana"
    )
    ws = await Workspace.open(settings)
    return ws, ReviewService(TaskService(ws))


async def _decisions(ws: Workspace, task_id: str) -> list[dict[str, object]]:
    events = await ws.store.get_task_events(task_id, kinds=[EventKind.ANALYST_FEEDBACK_RECORDED])
    return [e.payload for e in events]


async def test_bulk_satisfied_gives_every_task_its_own_decision(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws, review = await _review(make_settings, db_url)
    ids = await seed_reviewable(ws.store, 12)
    plan = await plan_bulk(review, ids, BulkAction.SATISFIED, reviewer="ana")
    assert len(plan.ready) == 12 and not plan.skipped
    assert plan.confirmation().startswith("Close as satisfied 12 task(s)?")
    steps: list[BulkProgress] = []
    result = await run_bulk(review, plan, reviewer="ana", progress=steps.append)
    assert result.done == ids and not result.failed and not result.cancelled
    assert [s.done for s in steps] == list(range(1, 13)) and {s.total for s in steps} == {12}
    for task_id in ids:
        assert (await ws.store.get_task(task_id)).status is TaskStatus.CLOSED
        (decision,) = await _decisions(ws, task_id)
        assert decision["action"] == "satisfied" and decision["reviewer"] == "ana"
        assert len(await ws.store.list_feedback(task_id)) == 1
    await ws.close()


async def test_skips_are_named_and_a_stale_version_is_reported(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws, review = await _review(make_settings, db_url)
    ids = await seed_reviewable(ws.store, 5)
    imported = await ws.store.create_task(
        "from elsewhere", title="Imported one", read_only=True, origin="bundle:abc123"
    )
    closed = (await seed_reviewable(ws.store, 1, status=TaskStatus.CLOSED, prefix="Done"))[0]
    await Claims(ws.store).claim(ids[1], "bo")  # someone else reviews it
    plan = await plan_bulk(review, [*ids, imported.id, closed], BulkAction.SATISFIED, reviewer="ana")
    skipped = {s.task_id: s for s in plan.skipped}
    assert set(skipped) == {ids[1], imported.id, closed}
    assert "claimed by bo" in skipped[ids[1]].reason
    assert skipped[imported.id].reason.startswith("read-only")
    assert "closed task cannot be satisfied" in skipped[closed].reason
    text = plan.confirmation()
    assert "4 task(s)" in text and "3 skipped" in text and "Imported one" in text and "Task 01" in text
    # Another analyst decides task 3 after the confirmation: its version check fails and is reported.
    stale = await ws.store.get_task(ids[3])
    await review.feedback(stale.id, FeedbackAction.ABANDON, expected_version=stale.version)
    result = await run_bulk(review, plan, reviewer="ana")
    assert result.done == [ids[0], ids[2], ids[4]]
    (failure,) = result.failed
    assert failure.task_id == ids[3] and "changed since it was read" in failure.reason
    assert (await ws.store.get_task(ids[1])).status is TaskStatus.AWAITING_FEEDBACK
    assert (await ws.store.get_task(ids[3])).status is TaskStatus.ABANDONED
    assert "1 failed" in result.summary() and "3 skipped" in result.summary()
    await ws.close()


@pytest.mark.parametrize("k", [0, 3])
async def test_cancel_from_the_progress_callback_stops_after_exactly_k(
    make_settings: ScriptFactory, db_url: str, k: int
) -> None:
    ws, review = await _review(make_settings, db_url)
    ids = await seed_reviewable(ws.store, 8)
    plan = await plan_bulk(review, ids, BulkAction.ABANDON, reviewer="ana")
    cancel = Cancellation()
    if k == 0:
        cancel.cancel()

    def progress(step: BulkProgress) -> None:
        if step.done == k:
            cancel.cancel()

    result = await run_bulk(review, plan, reviewer="ana", note="duplicate", progress=progress, cancel=cancel)
    assert result.cancelled and len(result.done) == k
    statuses = [(await ws.store.get_task(i)).status for i in ids]
    assert statuses == [TaskStatus.ABANDONED] * k + [TaskStatus.AWAITING_FEEDBACK] * (8 - k)
    for task_id in ids[:k]:
        assert [d["note"] for d in await _decisions(ws, task_id)] == ["duplicate"]
    assert "cancelled" in result.summary()
    await ws.close()


async def test_assign_is_a_long_claim_with_an_event(make_settings: ScriptFactory, db_url: str) -> None:
    ws, review = await _review(make_settings, db_url)
    ids = await seed_reviewable(ws.store, 3)
    claims = Claims(ws.store)
    await claims.claim(ids[0], "ana")  # the desk assigning holds the task on screen: still assignable
    await claims.claim(ids[2], "bo")
    plan = await plan_bulk(review, ids, BulkAction.ASSIGN, reviewer="ana", assignee="cy")
    assert [t.id for t in plan.ready] == ids[:2] and plan.skipped[0].task_id == ids[2]
    result = await run_bulk(review, plan, reviewer="ana")
    assert result.done == ids[:2]
    held = await claims.for_tasks(ids)
    assert held[ids[0]].reviewer == "cy" and held[ids[1]].reviewer == "cy" and held[ids[2]].reviewer == "bo"
    assert held[ids[0]].expires_at - claims.now() > timedelta(days=6)
    assigned = await ws.store.get_task_events(ids[1], kinds=[EventKind.CLAIM_ASSIGNED])
    assert [(e.payload["reviewer"], e.payload["by"]) for e in assigned] == [("cy", "ana")]
    assert [c.task_id for c in await claims.assigned("cy")] == sorted(
        ids[:2], key=lambda i: held[i].claimed_at
    )
    await ws.close()
