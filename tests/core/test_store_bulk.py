"""Store.import_records: whole tasks with ids kept, idempotent, one transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.domain.status import TaskStatus
from core.errors import StoreError
from core.store import NewEvent, SessionRecord, Store, TaskImport


@pytest.fixture
async def target(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(str(tmp_path / "target.sqlite3"))
    yield s
    await s.close()


async def make_task(store: Store, text: str) -> TaskImport:
    """A task with a main session, a team node's session (no task), runs, events and reviews."""
    task = await store.create_task(text)
    assert task.main_session_id is not None
    node = await store.create_session(task_id=None, kind="node", parent_session_id=task.main_session_id)
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=text)
    run = await store.create_run(
        session_id=task.main_session_id, kind="agent", model="m", task_id=task.id, attempt_id=attempt.id
    )
    node_run = await store.create_run(session_id=node.id, kind="node", model="m", task_id=task.id)
    await store.append_events(
        task.main_session_id,
        [NewEvent(kind="run_started", payload={"n": 1}), NewEvent(kind="run_finished", payload={})],
        run_id=run.id,
        task_id=task.id,
    )
    await store.append_event(node.id, "run_started", {}, run_id=node_run.id, task_id=task.id)
    await store.add_validation(
        task_id=task.id,
        attempt_id=attempt.id,
        attempt_index=1,
        result={"status": "accepted", "score": 0.8},
        raw_response="{}",
        prompt=None,
        debug={},
    )
    await store.add_feedback(
        task_id=task.id,
        attempt_id=attempt.id,
        action="satisfied",
        prompt=None,
        note="ok",
        reviewer="ana",
        from_status=TaskStatus.AWAITING_FEEDBACK,
        to_status=TaskStatus.CLOSED,
    )
    return await records_of(store, task.id)


async def records_of(store: Store, task_id: str) -> TaskImport:
    runs = await store.list_runs(task_id=task_id)
    sessions = await store.list_sessions(task_id)
    sessions += await store.get_sessions(sorted({r.session_id for r in runs} - {s.id for s in sessions}))
    return TaskImport(
        task=await store.get_task(task_id),
        attempts=await store.list_attempts(task_id),
        sessions=sessions,
        runs=runs,
        events=[e for s in sessions for e in await store.get_session_events(s.id)],
        validations=await store.list_validations(task_id),
        feedback=await store.list_feedback(task_id),
    )


def without_event_ids(records: TaskImport) -> TaskImport:
    return records.model_copy(update={"events": [e.model_copy(update={"id": 0}) for e in records.events]})


async def test_import_keeps_every_record_and_continues_the_counters(store: Store, target: Store) -> None:
    original = await make_task(store, "first")
    result = await target.import_records([original])
    assert result.imported_task_ids == [original.task.id] and result.skipped_task_ids == []
    assert result.events == 3
    copy = await records_of(target, original.task.id)
    assert without_event_ids(copy) == without_event_ids(original)
    assert original.task.main_session_id is not None
    assert (await target.append_event(original.task.main_session_id, "note", {})).seq == 3


async def test_importing_again_skips_the_task_and_writes_nothing(store: Store, target: Store) -> None:
    first, second = await make_task(store, "first"), await make_task(store, "second")
    await target.import_records([first])
    again = await target.import_records([first, second])
    assert again.skipped_task_ids == [first.task.id]
    assert again.imported_task_ids == [second.task.id]
    assert again.events == 3
    again = await target.import_records([first, second])
    assert again.imported_task_ids == [] and again.events == 0
    assert len(await target.list_tasks()) == 2
    for records in (first, second):
        copy = await records_of(target, records.task.id)
        assert without_event_ids(copy) == without_event_ids(records)


async def test_a_failing_record_leaves_nothing_behind(store: Store, target: Store) -> None:
    first, second = await make_task(store, "first"), await make_task(store, "second")
    # The target already uses one of the second task's session ids, for a task of its own.
    squatter = await make_task(store, "squatter")
    node = next(s for s in second.sessions if s.task_id is None)
    squatter = squatter.model_copy(
        update={"sessions": [*squatter.sessions, SessionRecord(**{**node.model_dump(), "label": "x"})]}
    )
    await target.import_records([squatter])
    before = await target.list_tasks()
    with pytest.raises(StoreError, match="refused the import"):
        await target.import_records([first, second])
    assert await target.list_tasks() == before  # not even the first task, which had no conflict
    assert first.task.main_session_id is not None
    assert await target.get_session_events(first.task.main_session_id) == []
    assert await target.get_sessions([s.id for s in first.sessions]) == []
    assert len(await target.get_session_events(node.id)) == 0  # the squatter's session is untouched

    # A record late in the transaction (feedback, written last) pointing at no task fails it too.
    broken = first.model_copy(
        update={"feedback": [first.feedback[0].model_copy(update={"task_id": "no-such-task"})]}
    )
    with pytest.raises(StoreError, match="refused the import"):
        await target.import_records([broken])
    assert await target.list_tasks() == before
    assert await target.list_attempts(first.task.id) == []


async def test_events_of_sessions_the_task_does_not_list_are_refused(store: Store, target: Store) -> None:
    records = await make_task(store, "first")
    stray = records.model_copy(update={"sessions": records.sessions[:1]})
    with pytest.raises(ValueError, match="does not list"):
        await target.import_records([stray])
    assert await target.list_tasks() == []
