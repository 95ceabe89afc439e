"""Write-behind events wait for company, but never for someone who needs them."""

from __future__ import annotations

import asyncio

from core.store import NewEvent, Store


def ev(kind: str, **payload: object) -> NewEvent:
    return NewEvent(kind=kind, payload=dict(payload))


async def test_queued_turns_share_one_commit_and_flush_skips_the_window(store: Store) -> None:
    store.write_behind_s = 3600.0  # the window never elapses in this test: only a waiter ends it
    session = await store.create_session(task_id=None, kind="main")
    for turn in range(5):
        store.enqueue_events(session.id, [ev("answer", turn=turn), ev("tool_result", turn=turn)])
    # flush() is what every reader does; it must not wait out the window.
    await asyncio.wait_for(store.flush(), timeout=60)
    events = await store.get_session_events(session.id)
    assert [(e.seq, e.kind, e.payload["turn"]) for e in events] == [
        (2 * t + i + 1, kind, t) for t in range(5) for i, kind in enumerate(("answer", "tool_result"))
    ]


async def test_an_awaited_append_commits_the_queue_before_it_at_once(store: Store) -> None:
    store.write_behind_s = 3600.0
    session = await store.create_session(task_id=None, kind="main")
    store.enqueue_events(session.id, [ev("answer", n=1), ev("tool_result", n=2)])
    records = await asyncio.wait_for(store.append_events(session.id, [ev("run_finished", n=3)]), timeout=60)
    assert [r.seq for r in records] == [3]
    assert [e.kind for e in await store.get_session_events(session.id)] == [
        "answer",
        "tool_result",
        "run_finished",
    ]


async def test_an_unflushed_read_of_another_session_leaves_the_queue_to_its_window(store: Store) -> None:
    # A replay reads a decided task's history while its own verdicts wait for company: the read
    # must neither commit them early (it would end their shared commit) nor wait for them.
    store.write_behind_s = 3600.0
    decided = await store.create_session(task_id=None, kind="main")
    await store.commit_events(decided.id, [ev("answer", n=1)])
    shadow = await store.create_session(task_id=None, kind="shadow")
    store.enqueue_events(shadow.id, [ev("shadow_verdict_recorded", n=1)])
    read = await asyncio.wait_for(store.get_session_events(decided.id, flush=False), timeout=60)
    assert [e.kind for e in read] == ["answer"]
    assert await store.get_session_events(shadow.id, flush=False) == []  # still queued, not committed
    assert [e.kind for e in await store.get_session_events(shadow.id)] == ["shadow_verdict_recorded"]
