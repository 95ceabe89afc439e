"""Shadow replay on the team's workers (PostgreSQL): ``revalidate`` queues one job per decided
attempt while a worker lives, a worker killed mid-verdict is replaced, and every verdict is stored
exactly once with no task touched.

Synchronised on what the database says (verdicts stored, jobs running), never on sleeping: worker
A's candidate answers cases 0-2 at once and never answers the others, so "3 verdicts stored and 2
jobs running" is the moment A is mid-verdict on both its slots; it is killed there.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, make_url, text

from core.cli.main import main as cli_main
from core.config import load_settings
from core.domain.evidence import TaskEvidencePacket
from core.domain.status import TaskStatus
from core.judge.candidates import load_candidate
from core.judge.replay import Replayer, ReplaySelection
from core.judge.replay_queue import ReplayState, job_lock, queue_replay, replay_state
from core.workspace import Workspace
from tests.core.test_validation import verdict
from tests.team.conftest import sync_rows, worker_process
from tests.team.test_workers import _wait_for
from tests.zygote import ZygoteProcess

CASES = 8
CANDIDATES = json.dumps({"strict": {"model": "scripted/candidate"}})
FAST = ("--heartbeat", "0.5", "--stalled-after", "3", "--poll", "0.5")


def _script(path: Path, *, hang_after_case_2: bool) -> Path:
    rest: dict[str, Any] = {"content": verdict("accepted")}
    if hang_after_case_2:
        rest["delay_s"] = 3600  # worker A is killed while it waits here
    conversations = [
        {"model": "candidate", "match": r"case [0-2]:", "turns": [{"content": verdict("rejected")}]},
        {"model": "candidate", "turns": [rest]},
    ]
    path.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    return path


async def _decide(pg_url: str, script: Path) -> list[str]:
    """CASES tasks with an answer, closed by an analyst (written straight to the store: the live
    run that would lead there is not what this test is about)."""
    ws = await Workspace.open(load_settings(script=script, db_url=pg_url))
    try:
        ids = []
        for i in range(CASES):
            task = await ws.store.create_task(f"case {i}: what causes tides?")
            attempt = await ws.store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
            packet = TaskEvidencePacket(task_id=task.id, attempt_index=1, final_output=f"The Moon ({i}).")
            await ws.store.update_attempt(
                attempt.id, final_output=packet.final_output, packet=packet.model_dump(mode="json")
            )
            await ws.store.add_feedback(
                task_id=task.id, attempt_id=attempt.id, action="satisfied", prompt=None, note=None,
                reviewer="ana", from_status=TaskStatus.AWAITING_FEEDBACK, to_status=TaskStatus.CLOSED,
            )  # fmt: skip
            await ws.store.update_task(task.id, status=TaskStatus.CLOSED)
            ids.append(task.id)
        return ids
    finally:
        await ws.close()


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    code = cli_main([*args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def _tasks(pg_url: str) -> list[tuple[Any, ...]]:
    return sync_rows(pg_url, "select id, status, version, updated_at, attempt_count from tasks order by id")


def _shadows(pg_url: str) -> list[str]:
    rows = sync_rows(pg_url, "select payload from events where kind = 'shadow_verdict_recorded' order by id")
    return [(p if isinstance(p, dict) else json.loads(p))["attempt_id"] for (p,) in rows]


@pytest.mark.slow
def test_revalidate_on_workers_survives_a_killed_worker_and_stores_each_verdict_once(
    pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    processes: list[ZygoteProcess],
) -> None:
    fast = _script(tmp_path / "fast.json", hang_after_case_2=False)
    hanging = _script(tmp_path / "hanging.json", hang_after_case_2=True)
    ids = asyncio.run(_decide(pg_url, fast))
    monkeypatch.setenv("EVIDENCE_DESK_VALIDATOR_CANDIDATES", CANDIDATES)
    db = ("--db", pg_url, "--script", str(fast))
    code, queue_before, err = _cli(capsys, "list", *db)
    assert code == 0, err
    before = _tasks(pg_url)

    env = {"EVIDENCE_DESK_VALIDATOR_CANDIDATES": CANDIDATES, "EVIDENCE_DESK_LLM_TIMEOUT_S": "3600"}
    a = worker_process(pg_url, hanging, *FAST, "--concurrency", "2", "--name", "a", **env)
    processes.append(a)
    _wait_for(pg_url, "select count(*) from procrastinate_workers", lambda r: r[0][0] >= 1, proc=a)

    code, queued, err = _cli(capsys, "revalidate", "--candidate", "strict", *db)
    assert code == 0, err
    assert queued["on_workers"] and (queued["queued"], queued["selected"]) == (CASES, CASES)
    assert sync_rows(pg_url, "select count(*) from procrastinate_jobs where task_name = 'evidence_desk.shadow_verdict'") == [(CASES,)]  # fmt: skip

    # A is mid-verdict on both its slots: the fast cases stored, two hanging jobs running
    _wait_for(
        pg_url,
        "select (select count(*) from events where kind = 'shadow_verdict_recorded'), "
        "(select count(*) from procrastinate_jobs where status = 'doing')",
        lambda r: r[0] == (3, 2),
        proc=a,
    )
    a.send_signal(signal.SIGKILL)
    a.wait(timeout=60)
    assert len(_shadows(pg_url)) == 3

    # No worker lives: A's two running jobs are left to procrastinate's stalled-job retry, not
    # queued twice (asked before B starts, so what B has done yet cannot change the count)
    code, requeued, err = _cli(capsys, "revalidate", "--candidate", "strict", *db)
    assert code == 0, err
    assert (requeued["queued"], requeued["already_queued"], requeued["already_done"]) == (0, 5, 3)

    b = worker_process(pg_url, fast, *FAST, "--concurrency", "4", "--name", "b", **env)
    processes.append(b)
    code, done, err = _cli(capsys, "revalidate", "--candidate", "strict", "--wait", *db)
    assert code == 0, err
    assert done["queued"] == 0 and done["already_queued"] + done["already_done"] == CASES
    assert (done["judged"], done["failed"], done["unjudged"]) == (CASES, 0, 0)
    assert f"revalidate: {CASES}/{CASES} judged, 0 queued, 0 running, 0 failed" in err
    b.send_signal(signal.SIGTERM)
    _, b_err = b.communicate(timeout=120)
    assert b.returncode == 0, b_err.decode()
    assert "of a stalled worker is retried" in b_err.decode()

    shadows = _shadows(pg_url)
    assert len(shadows) == CASES and len(set(shadows)) == CASES  # every attempt once, no duplicate
    assert _tasks(pg_url) == before  # no status, version or attempt changed
    assert sync_rows(pg_url, "select count(*) from events where task_id is not null and kind = 'shadow_verdict_recorded'") == [(0,)]  # fmt: skip
    code, queue_after, err = _cli(capsys, "list", *db)
    assert [t["id"] for t in queue_after] == [t["id"] for t in queue_before]  # the same queue, same order

    code, again, err = _cli(capsys, "revalidate", "--candidate", "strict", *db)
    assert code == 0 and (again.get("queued", 0), again["already_done"]) == (0, CASES)  # nothing left
    assert sorted(t[0] for t in before) == sorted(ids)
    assert {t[1] for t in before} == {"closed"}


def _sync_write(pg_url: str, *statements: str, **params: str) -> None:
    """One transaction from outside the store, as a worker would commit it."""
    engine = create_engine(make_url(pg_url).set(drivername="postgresql+psycopg"))
    try:
        with engine.begin() as conn:
            for sql in statements:
                conn.execute(text(sql), params)
    finally:
        engine.dispose()


async def _state_across_the_last_verdict(pg_url: str, script: Path) -> tuple[ReplayState, ReplayState]:
    """Seven attempts judged and their jobs ended, the eighth's job running; while `replay_state`
    reads, right after its first query, the last job commits its verdict and ends (what a worker
    does: the verdict first, then procrastinate's `succeeded`). Then the state once more."""
    ws = await Workspace.open(load_settings(script=script, db_url=pg_url))
    try:
        candidate = load_candidate(ws.settings, "strict")
        queued = await queue_replay(ws, candidate, ReplaySelection())
        replayer = await Replayer.open(ws, candidate, shared=True)
        for task_id, attempt_id in sync_rows(pg_url, "select task_id, id from attempts order by task_id"):
            await replayer.judge(task_id, attempt_id, 1)
        last = queued.attempt_ids[-1]
        _sync_write(
            pg_url,
            "update events set kind = 'held_back' where kind = 'shadow_verdict_recorded' "
            "and payload::jsonb ->> 'attempt_id' = :last",
            "update procrastinate_jobs set status = 'doing' where lock = :lock",
            "update procrastinate_jobs set status = 'succeeded' where lock <> :lock",
            last=last,
            lock=job_lock(queued.session_id, last),
        )
        fired: list[str] = []

        def last_job_ends(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if not fired and ("procrastinate_jobs" in statement or "events" in statement):
                fired.append(statement)
                _sync_write(
                    pg_url,
                    "update events set kind = 'shadow_verdict_recorded' where kind = 'held_back'",
                    "update procrastinate_jobs set status = 'succeeded' where status = 'doing'",
                )

        engine = ws.store.engine.sync_engine
        event.listen(engine, "after_cursor_execute", last_job_ends)
        try:
            during = await replay_state(ws.store, queued.session_id, queued.attempt_ids)
        finally:
            event.remove(engine, "after_cursor_execute", last_job_ends)
        assert fired, "the last job never ended during the read"
        after = await replay_state(ws.store, queued.session_id, queued.attempt_ids)
        return during, after
    finally:
        await ws.close()


@pytest.mark.slow
def test_replay_state_never_looks_finished_short_of_a_verdict_the_last_job_is_storing(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `--wait` of the killed-worker test once returned 7 of 8 judged, 0 failed: the verdicts
    were read before the jobs, and the last job stored its verdict and ended in between."""
    fast = _script(tmp_path / "fast.json", hang_after_case_2=False)
    asyncio.run(_decide(pg_url, fast))
    monkeypatch.setenv("EVIDENCE_DESK_VALIDATOR_CANDIDATES", CANDIDATES)
    during, after = asyncio.run(_state_across_the_last_verdict(pg_url, fast))
    # whichever it saw, it must not be "finished" without the eighth verdict
    assert during.judged == CASES or not during.finished, during
    assert (during.failed, during.unjudged) == (0, 0), during
    assert after == ReplayState(CASES, CASES, 0, 0, 0, 0)
