"""A run's row is written with its first event and finished with its last: never one without the other."""

from __future__ import annotations

import pytest

from core.domain.facts import EventKind
from core.domain.records import RunRecord
from core.errors import StoreError
from core.store import NewEvent, Store


async def _start(store: Store, session_id: str) -> RunRecord:
    started = NewEvent(kind=EventKind.RUN_STARTED, payload={})
    return await store.start_run(session_id=session_id, kind="agent", model="scripted/m", started=started)


async def _end(store: Store, run: RunRecord) -> None:
    await store.end_run(
        run.id,
        session_id=run.session_id,
        finished=NewEvent(kind=EventKind.RUN_FINISHED, payload={"finish_reason": "stop"}),
        finish_reason="stop",
        output_text="done",
    )


async def test_a_run_starts_and_ends_with_its_events(store: Store) -> None:
    session = await store.create_session(task_id=None, kind="main")
    run = await _start(store, session.id)
    assert (await store.get_run(run.id)).state == "running"
    await _end(store, run)
    stored = await store.get_run(run.id)
    assert (stored.state, stored.finish_reason, stored.output_text) == ("finished", "stop", "done")
    events = await store.get_run_event_records(session.id, run.id)
    assert [(e.seq, e.kind) for e in events] == [(1, EventKind.RUN_STARTED), (2, EventKind.RUN_FINISHED)]


async def test_a_run_whose_first_event_cannot_be_written_leaves_no_row(store: Store) -> None:
    """The start is written behind the loop: its refusal reaches the run's own next write (here its
    end, awaited), names the session, and neither the row nor the end is written past it."""
    run = await _start(store, "missing")
    with pytest.raises(StoreError, match="events of session missing could not be written") as failure:
        await _end(store, run)
    assert "FOREIGN KEY" in str(failure.value).upper()
    # One line, the driver's words: not the statement, nor its parameters (the run's own values).
    assert "\n" not in str(failure.value) and run.id not in str(failure.value)
    assert await store.list_runs() == []


async def test_a_started_run_is_read_back_before_its_first_commit(store: Store) -> None:
    """Queued, not awaited, yet a reader in the same process sees the run: reads of runs wait for
    the queue, as reads of events do."""
    store.write_behind_s = 3600.0  # the window never ends on its own: only the read can commit it
    session = await store.create_session(task_id=None, kind="main")
    run = await _start(store, session.id)
    assert [r.id for r in await store.list_runs()] == [run.id]
    assert (await store.get_run(run.id)).state == "running"
