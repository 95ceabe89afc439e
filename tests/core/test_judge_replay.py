"""Shadow replay on both engines (SQLite and PostgreSQL): verdicts stored in the candidate's own
session, no task touched, a second run judges nothing, a new candidate version a new session."""

from __future__ import annotations

import asyncio

import pytest

from core.domain.evidence import TaskEvidencePacket
from core.domain.facts import EventKind, WarningCode
from core.domain.status import TaskStatus, ValidationStatus
from core.errors import InvalidRequest, StoreError
from core.judge.candidates import load_candidate
from core.judge.replay import (
    ALREADY_JUDGED,
    ReplaySelection,
    _Turn,
    revalidate,
    shadow_session,
    shadow_verdicts,
)
from core.judge.replay_queue import run_shadow_job
from core.store.judge_sql import case_rows
from core.validation.warnings import read_warnings
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory
from tests.core.test_validation import verdict


async def _decided(ws: Workspace, n: int) -> list[str]:
    ids = []
    for i in range(n):
        task = await ws.store.create_task(f"case {i}: what causes tides?")
        attempt = await ws.store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
        answer = f"The Moon ({i})."
        packet = TaskEvidencePacket(task_id=task.id, attempt_index=1, final_output=answer)
        await ws.store.update_attempt(attempt.id, final_output=answer, packet=packet.model_dump(mode="json"))
        await ws.store.add_feedback(
            task_id=task.id, attempt_id=attempt.id, action="satisfied" if i % 2 else "abandon", prompt=None,
            note=None, reviewer="ana", from_status=TaskStatus.AWAITING_FEEDBACK, to_status=TaskStatus.CLOSED,
        )  # fmt: skip
        ids.append(task.id)
    return ids


async def test_a_replays_case_rows_are_the_stores_own_records(
    make_settings: ScriptFactory, db_url: str
) -> None:
    # One read of Core rows (one thread hop on SQLite) instead of the ORM's four: the records
    # must be exactly those the store's own readers give, on both engines.
    conversations = [{"model": "candidate", "turns": [{"content": verdict("accepted")}]}]
    ws = await Workspace.open(make_settings(conversations, db_url=db_url))
    try:
        (task_id,) = await _decided(ws, 1)
        (attempt,) = await ws.store.list_attempts(task_id, resolve=False)
        await ws.store.add_validation(
            task_id=task_id, attempt_id=attempt.id, attempt_index=1, raw_response="{}", prompt="judge this",
            result={"status": "accepted", "score": 0.8, "category": "none"}, debug={"validator_model": "m"},
        )  # fmt: skip
        rows = await case_rows(ws.store, task_id)
        assert rows.task == await ws.store.get_task(task_id)
        assert rows.attempts == [attempt] and rows.attempts[0].packet
        assert rows.validations == await ws.store.list_validations(task_id) and len(rows.validations) == 1
        assert rows.feedback == await ws.store.list_feedback(task_id) and len(rows.feedback) == 1
        with pytest.raises(StoreError, match="no task with id"):
            await case_rows(ws.store, "f" * 32)
    finally:
        await ws.close()


async def test_verdicts_take_turns_up_to_their_model_call() -> None:
    # A verdict's local work waits for the verdict before it to send its model call (or finish),
    # in arrival order, so the calls go out staggered rather than in lockstep.
    turn = _Turn()
    order: list[str] = []
    first_in, second_wants = asyncio.Event(), asyncio.Event()

    async def first() -> None:
        async with turn.taken() as release:
            order.append("first works")
            first_in.set()
            await second_wants.wait()
            order.append("first sends")
            release()
            release()  # idempotent: the gateway calls it for every try
            order.append("first waits on its model")

    async def second() -> None:
        await first_in.wait()
        order.append("second wants")
        second_wants.set()
        async with turn.taken():
            order.append("second works")

    async with asyncio.TaskGroup() as group:
        group.create_task(first())
        group.create_task(second())
    assert order == ["first works", "second wants", "first sends", "first waits on its model", "second works"]


async def test_a_replay_returns_with_every_verdict_committed(
    make_settings: ScriptFactory, db_url: str
) -> None:
    # Alone on its attempts, a replay's verdicts are written behind (they share commits); it
    # returns only once all are committed, without waiting out the writer's window.
    conversations = [{"model": "candidate", "turns": [{"content": verdict("accepted")}]}]
    settings = make_settings(
        conversations, db_url=db_url, validator_candidates={"c": {"model": "scripted/candidate"}}
    )
    ws = await Workspace.open(settings)
    try:
        await _decided(ws, 6)
        ws.store.write_behind_s = 3600.0  # only a waiter ends the window
        summary = await asyncio.wait_for(
            revalidate(ws, load_candidate(settings, "c"), ReplaySelection(), concurrency=3), timeout=120
        )
        stored = await ws.store.get_session_events(summary.session_id, flush=False)
        assert summary.judged == len(stored) == 6
    finally:
        await ws.close()


async def test_replay_stores_shadow_verdicts_only_and_resumes(
    make_settings: ScriptFactory, db_url: str
) -> None:
    conversations = [
        {"model": "candidate", "match": r"case [02]:", "turns": [{"content": verdict("rejected")}]},
        {"model": "candidate", "turns": [{"content": verdict("accepted")}]},
    ]
    candidates = {
        "strict": {"model": "scripted/candidate"},
        "warm": {"model": "scripted/candidate", "temperature": 0.7},
    }
    settings = make_settings(conversations, db_url=db_url, validator_candidates=candidates)
    ws = await Workspace.open(settings)
    try:
        ids = await _decided(ws, 4)
        before = [
            (t.id, t.status, t.version, t.updated_at) for t in [await ws.store.get_task(i) for i in ids]
        ]
        strict = load_candidate(settings, "strict")
        seen: list[int] = []
        summary = await revalidate(
            ws, strict, ReplaySelection(), concurrency=2, on_progress=lambda p: seen.append(p.done)
        )
        assert (summary.selected, summary.judged, summary.already_done) == (4, 4, 0)
        assert dict(summary.statuses) == {"rejected": 2, "accepted": 2} and sorted(seen) == [1, 2, 3, 4]
        verdicts = await shadow_verdicts(ws.store, summary.session_id)
        assert {v.task_id: str(v.status) for v in verdicts.values()} == {
            ids[0]: "rejected", ids[1]: "accepted", ids[2]: "rejected", ids[3]: "accepted",
        }  # fmt: skip
        assert all(v.validator_version == strict.version for v in verdicts.values())
        after = [(t.id, t.status, t.version, t.updated_at) for t in [await ws.store.get_task(i) for i in ids]]
        assert after == before
        for task_id in ids:  # nothing on the task: no verdict, no event
            assert await ws.store.list_validations(task_id) == []
            assert await ws.store.get_task_events(task_id, kinds=[EventKind.SHADOW_VERDICT_RECORDED]) == []
        again = await revalidate(ws, strict, ReplaySelection())
        assert (again.judged, again.already_done, again.session_id) == (0, 4, summary.session_id)
        open_task = (await ws.store.create_task("not decided yet")).id
        chosen = ReplaySelection(task_ids=[ids[1], open_task], limit=1)
        warm = await revalidate(ws, load_candidate(settings, "warm"), chosen)
        assert warm.not_decided == [open_task]
        assert warm.judged == 1 and warm.session_id != summary.session_id
    finally:
        await ws.close()


async def test_a_shadow_verdict_is_held_to_coherence_and_the_verdict_budget(
    make_settings: ScriptFactory, db_url: str
) -> None:
    # The candidate judges as a live validator would: an acceptance its own score contradicts does
    # not count, and a judge that never answers ends at validator_budget_s, not validator_timeout_s.
    conversations = [
        {"model": "candidate", "match": r"case 0:", "turns": [{"content": verdict("accepted", score=0.5)}]},
        {"model": "candidate", "turns": [{"content": verdict("accepted"), "delay_s": 600}]},
    ]
    settings = make_settings(
        conversations,
        db_url=db_url,
        validator_candidates={"weak": {"model": "scripted/candidate"}},
        validator_timeout_s=600,
        validator_budget_s=1,
        llm_num_retries=0,
    )
    ws = await Workspace.open(settings)
    try:
        ids = await _decided(ws, 2)
        summary = await revalidate(ws, load_candidate(settings, "weak"), ReplaySelection())
        verdicts = {v.task_id: v for v in (await shadow_verdicts(ws.store, summary.session_id)).values()}
        weak, hung = verdicts[ids[0]], verdicts[ids[1]]
        assert weak.status == ValidationStatus.INSUFFICIENT_EVIDENCE
        assert weak.downgraded_from == "accepted" and weak.coherence_failures == ["low-score"]
        assert WarningCode.INCOHERENT_VERDICT in [w.code for w in read_warnings(weak.model_dump())]
        assert hung.status == ValidationStatus.VALIDATOR_ERROR
        assert "validator_budget_s" in (hung.error or "") and "budget of 1 s" in (hung.error or "")
    finally:
        await ws.close()


async def test_a_shadow_job_stores_its_verdict_once_and_refuses_another_version(
    make_settings: ScriptFactory, db_url: str
) -> None:
    # A worker's job (core.judge.replay_queue): run again (procrastinate's retry of a killed
    # worker's job, or a second worker) it finds the verdict stored and stores none; a worker
    # whose settings make another version of the candidate refuses to judge for it.
    conversations = [{"model": "candidate", "turns": [{"content": verdict("accepted")}]}]
    settings = make_settings(
        conversations, db_url=db_url, validator_candidates={"strict": {"model": "scripted/candidate"}}
    )
    ws = await Workspace.open(settings)
    try:
        (task_id,) = await _decided(ws, 1)
        (attempt,) = await ws.store.list_attempts(task_id, resolve=False)
        strict = load_candidate(settings, "strict")
        job = ("strict", strict.version, task_id, attempt.id, 1)
        assert await run_shadow_job(ws, {}, *job) == "accepted"
        assert await run_shadow_job(ws, {}, *job) == ALREADY_JUDGED
        session_id = await shadow_session(ws.store, strict, create=False)
        assert session_id is not None
        assert list(await shadow_verdicts(ws.store, session_id)) == [attempt.id]
        events = await ws.store.get_session_events(session_id, kinds=[EventKind.SHADOW_VERDICT_RECORDED])
        assert len(events) == 1
        with pytest.raises(InvalidRequest, match="queued for 0123456789ab"):
            await run_shadow_job(ws, {}, "strict", "0123456789ab", task_id, attempt.id, 1)
    finally:
        await ws.close()
