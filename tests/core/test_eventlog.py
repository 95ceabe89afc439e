"""The event log's one insert path: awaited and written-behind appends share a queue and a writer."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from core.domain import TaskStatus
from core.domain.content import ContentPolicy
from core.domain.records import EventRecord
from core.errors import StoreError
from core.store import NewEvent, Store, eventlog
from core.store.models import EventRow, RunRow


def ev(kind: str, **payload: object) -> NewEvent:
    return NewEvent(kind=kind, payload=dict(payload))


async def test_interleaved_awaited_and_queued_appends_keep_seq_contiguous_and_ordered(store: Store) -> None:
    shared = await store.create_session(task_id=None, kind="main")

    async def writer(w: int) -> None:
        own = await store.create_session(task_id=None, kind="node")
        for i in range(60):
            target = shared.id if i % 2 else own.id
            if i % 3 == 0:
                await store.append_events(target, [ev("awaited", w=w, i=i), ev("awaited", w=w, i=i)])
            else:
                store.enqueue_events(target, [ev("queued", w=w, i=i)])
            if i % 7 == 0:
                await asyncio.sleep(0)  # let the other writers in between

    await asyncio.gather(*(writer(w) for w in range(4)))
    events = await store.get_session_events(shared.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    for w in range(4):
        mine = [e.payload["i"] for e in events if e.payload["w"] == w]
        assert mine == sorted(mine)  # each writer's events in the order it produced them
        assert len(mine) == sum(2 if i % 3 == 0 else 1 for i in range(1, 60, 2))


async def test_awaited_append_returns_stored_records_after_queued_ones(store: Store) -> None:
    session = await store.create_session(task_id=None, kind="main")
    store.enqueue_events(session.id, [ev("queued", n=1), ev("queued", n=2)])
    records = await store.append_events(session.id, [ev("direct", n=3), ev("direct", n=4)], run_id="r1")
    assert [(r.seq, r.kind, r.run_id) for r in records] == [(3, "direct", "r1"), (4, "direct", "r1")]
    stored = await store.get_session_events(session.id)
    assert stored[2:] == records  # ids and values exactly as stored
    assert [e.id for e in stored] == sorted(e.id for e in stored)


async def test_one_bad_session_never_costs_another_its_events(store: Store) -> None:
    good = await store.create_session(task_id=None, kind="main")
    other = await store.create_session(task_id=None, kind="node")
    store.enqueue_events(good.id, [ev("before")])
    store.enqueue_events("no-such-session", [ev("lost")])
    awaited = asyncio.ensure_future(store.append_events(other.id, [ev("awaited")]))
    store.enqueue_events(good.id, [ev("after")])
    assert [r.kind for r in await awaited] == ["awaited"]
    await store.flush()  # blames nobody
    assert [e.kind for e in await store.get_session_events(good.id)] == ["before", "after"]
    assert [e.seq for e in await store.get_session_events(other.id)] == [1]
    with pytest.raises(StoreError, match="could not be written"):
        await store.flush("no-such-session")
    await store.flush("no-such-session")  # told once
    with pytest.raises(StoreError, match="no session"):
        await store.append_events("no-such-session", [ev("x")])  # an awaited caller hears directly
    await store.flush("no-such-session")  # and nothing is left to report


async def test_later_events_are_never_written_past_lost_ones(store: Store) -> None:
    session = await store.create_session(task_id=None, kind="main")
    bystander = await store.create_session(task_id=None, kind="node")
    # A payload that cannot be stored fails its item; the same session's later items must wait.
    store.enqueue_events(
        session.id, [NewEvent(kind="bad", payload={"x": object(), "task": "the analyst's text"})]
    )
    store.enqueue_events(session.id, [ev("behind the hole")])
    store.enqueue_events(bystander.id, [ev("fine")])
    awaited = asyncio.ensure_future(store.append_events(session.id, [ev("awaited behind the hole")]))
    with pytest.raises(StoreError, match="could not be written") as failure:
        await awaited  # the owner hears about the hole instead of writing past it
    # One line with the driver's words: SQLAlchemy's dump of the statement and its parameters
    # would put the events themselves (a task's text, a tool's result) in a log line.
    told = str(failure.value)
    assert "JSON serializable" in told
    assert "\n" not in told and "INSERT" not in told and "the analyst's text" not in told
    assert await store.get_session_events(session.id) == []
    assert [e.kind for e in await store.get_session_events(bystander.id)] == ["fine"]
    await store.flush(session.id)  # already reported to the awaited caller
    record = await store.append_event(session.id, "after the report", {})
    assert record.seq == 1  # the failed transactions gave their numbers back


async def test_status_change_event_lands_between_queued_events(store: Store) -> None:
    task = await store.create_task("status and log")
    assert task.main_session_id is not None
    sid = task.main_session_id
    store.enqueue_events(sid, [ev("queued", n=1)])
    await store.update_task(
        task.id, status=TaskStatus.RUNNING, event=(sid, ev("task_status_changed", to="running"))
    )
    store.enqueue_events(sid, [ev("queued", n=2)])
    await store.append_event(sid, "awaited", {})
    events = await store.get_session_events(sid)
    assert [(e.seq, e.kind) for e in events] == [
        (1, "queued"),
        (2, "task_status_changed"),
        (3, "queued"),
        (4, "awaited"),
    ]
    assert events[1].task_id == task.id


async def test_a_busy_database_is_retried_until_the_lock_is_released(tmp_path: Path) -> None:
    path = tmp_path / "ws.sqlite3"
    store = await Store.open(str(path), busy_timeout=0.05)
    session = await store.create_session(task_id=None, kind="main")
    retried = asyncio.Event()
    store.on_busy = lambda attempt: retried.set() if attempt >= 2 else None
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        store.enqueue_events(session.id, [ev("queued", n=1)])
        waiting = asyncio.ensure_future(store.append_events(session.id, [ev("awaited", n=2)]))
        await retried.wait()  # the writer found the file locked twice, and will try again
        assert not waiting.done()
    finally:
        blocker.rollback()
        blocker.close()
    assert [r.seq for r in await waiting] == [2]
    await store.flush(session.id)
    assert [e.kind for e in await store.get_session_events(session.id)] == ["queued", "awaited"]
    await store.close()


async def test_two_stores_on_one_file_mix_both_append_kinds(db_url: str) -> None:
    first, second = await Store.open(db_url), await Store.open(db_url)
    session = await first.create_session(task_id=None, kind="main")

    async def writer(store: Store, tag: str) -> None:
        for i in range(40):
            if i % 2:
                store.enqueue_events(session.id, [ev(tag, i=i)])
            else:
                await store.append_event(session.id, tag, {"i": i})
        await store.flush(session.id)

    await asyncio.gather(writer(first, "a"), writer(second, "b"))
    events = await first.get_session_events(session.id)
    assert [e.seq for e in events] == list(range(1, 81))
    for tag in "ab":
        assert [e.payload["i"] for e in events if e.kind == tag] == list(range(40))
    await first.close()
    await second.close()


async def test_sessions_created_through_the_writer_keep_queued_order_and_refuse_alone(store: Store) -> None:
    task = await store.create_task("t")
    first = await store.create_session(task_id=task.id, kind="main")
    store.enqueue_events(first.id, [ev("queued before")])
    created, refused, appended = await asyncio.gather(
        store.create_session(task_id=task.id, kind="node", label="n1", parent_session_id=first.id),
        store.create_session(task_id="no-such-task", kind="node"),  # a foreign key the schema refuses
        store.append_events(first.id, [ev("awaited beside them")]),
        return_exceptions=True,
    )
    assert isinstance(refused, IntegrityError)  # the caller hears it; nobody else loses anything
    assert not isinstance(created, BaseException) and not isinstance(appended, BaseException)
    sessions = await store.list_sessions(task.id)  # the task's own main session comes first
    assert [(s.id, s.label, s.parent_session_id) for s in sessions[-2:]] == [
        (first.id, "", None),
        (created.id, "n1", first.id),
    ]
    assert [e.kind for e in await store.get_session_events(first.id)] == [
        "queued before",
        "awaited beside them",
    ]
    # The record returned is the row as stored, and the new session takes events from seq 1.
    (stored,) = await store.get_sessions([created.id])
    assert stored == created
    await store.append_events(created.id, [ev("node event")])
    assert [e.seq for e in await store.get_session_events(created.id)] == [1]


async def test_event_reads_in_one_thread_hop_match_the_async_session_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQLite event read path returns exactly what an async session reads, read-only files too."""
    monkeypatch.chdir(tmp_path)  # Store.open makes the folders of a "file:" URL's path, relative to here
    path = tmp_path / "ws.sqlite3"
    store = await Store.open(str(path))
    store.content_policy = ContentPolicy(inline_limit=8, chunk_chars=16)
    task = await store.create_task("t")
    session = await store.create_session(task_id=task.id, kind="main")
    events = [ev("small", n=1, nested={"a": [1, 2]}), NewEvent(kind="big", payload={}, content="x" * 64)]
    await store.append_events(session.id, events, run_id="r1", task_id=task.id)
    query = select(EventRow).where(EventRow.session_id == session.id).order_by(EventRow.seq)
    async_read = await store._select(EventRecord, query)
    hop_read = await store.get_session_events(session.id, resolve=False)
    assert hop_read == async_read
    assert hop_read[0].created_at.tzinfo is not None and "content_ref" in hop_read[1].payload
    assert [e.content for e in await store.get_run_event_records(session.id, "r1")] == [None, "x" * 64]
    await store.close()
    read_only = await Store.open(f"sqlite:///file:{path}?mode=ro&uri=true", migrate=False)
    assert await read_only.get_task_events(task.id, resolve=False) == async_read
    await read_only.close()


async def test_commit_events_is_an_awaited_append_without_records(store: Store) -> None:
    session = await store.create_session(task_id=None, kind="main")
    store.enqueue_events(session.id, [ev("queued")])
    assert await store.commit_events(session.id, [ev("committed", n=1), ev("committed", n=2)]) is None
    # Committed when it returns, in order after what was queued, with no flush by the reader needed.
    query = select(EventRow).where(EventRow.session_id == session.id).order_by(EventRow.seq)
    assert [(r.seq, r.kind) for r in await store._select(EventRecord, query)] == [
        (1, "queued"),
        (2, "committed"),
        (3, "committed"),
    ]
    with pytest.raises(StoreError, match="no session"):
        await store.commit_events("no-such-session", [ev("x")])


async def test_a_queued_event_keeps_the_time_it_was_queued_not_its_commits(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written behind, an event is committed up to the window later (a run's start shares the commit
    of its first events, or of its end): its time is when it happened, or a run reads shorter."""
    session = await store.create_session(task_id=None, kind="main")
    store.write_behind_s = 3600.0  # only the awaited append below ends the window
    queued, committed = datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC), datetime(2026, 3, 1, 9, 0, 7, tzinfo=UTC)
    clock = [queued]
    monkeypatch.setattr(eventlog, "utcnow", lambda: clock[0])
    store.enqueue_events(session.id, [ev("started")])
    clock[0] = committed
    await store.append_events(session.id, [ev("finished")])
    stamps = {e.kind: e.created_at.replace(tzinfo=None) for e in await store.get_session_events(session.id)}
    assert stamps == {"started": queued.replace(tzinfo=None), "finished": committed.replace(tzinfo=None)}


async def test_a_refused_write_tells_its_caller_without_the_values_it_carried(store: Store) -> None:
    """A constraint the database enforces reaches an awaiting caller as itself (callers handle
    those), but its message never quotes the bound values: they are the events and rows written."""
    session = await store.create_session(task_id=None, kind="main")

    def orphan_run(conn: Connection) -> None:
        values = {"id": "r1", "session_id": "no-such-session", "kind": "agent", "model": "the analyst's text"}
        conn.execute(insert(RunRow).values(state="running", started_at=datetime.now(UTC)), values)

    with pytest.raises(IntegrityError) as failure:
        await store.commit_events(session.id, [ev("with an orphan run")], before=orphan_run)
    assert "the analyst's text" not in str(failure.value)
    assert await store.get_session_events(session.id) == []  # the transaction is all or nothing
