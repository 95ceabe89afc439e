"""A run's row is written with its first event and finished with its last: never one without the other."""

from __future__ import annotations

import pytest

from core.domain.facts import EventKind
from core.errors import StoreError
from core.store import NewEvent, Store


async def test_a_run_starts_and_ends_with_its_events(store: Store) -> None:
    session = await store.create_session(task_id=None, kind="main")
    run = await store.start_run(
        session_id=session.id,
        kind="agent",
        model="scripted/m",
        started=NewEvent(kind=EventKind.RUN_STARTED, payload={}),
    )
    assert (await store.get_run(run.id)).state == "running"
    await store.end_run(
        run.id,
        session_id=session.id,
        finished=NewEvent(kind=EventKind.RUN_FINISHED, payload={"finish_reason": "stop"}),
        finish_reason="stop",
        output_text="done",
    )
    stored = await store.get_run(run.id)
    assert (stored.state, stored.finish_reason, stored.output_text) == ("finished", "stop", "done")
    events = await store.get_run_event_records(session.id, run.id)
    assert [(e.seq, e.kind) for e in events] == [(1, EventKind.RUN_STARTED), (2, EventKind.RUN_FINISHED)]


async def test_a_run_whose_first_event_cannot_be_written_leaves_no_row(store: Store) -> None:
    with pytest.raises(Exception) as failure:  # the database's own refusal, of whatever class
        await store.start_run(
            session_id="missing",
            kind="agent",
            model="scripted/m",
            started=NewEvent(kind="run_started", payload={}),
        )
    assert failure.type is StoreError or "FOREIGN KEY" in str(failure.value).upper()
    assert await store.list_runs() == []
