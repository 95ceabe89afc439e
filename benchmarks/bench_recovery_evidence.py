"""What closing crashed attempts with their evidence costs crash recovery (issue 32).

Builds a workspace of N tasks a dead process left running, each attempt with one run and
``--results`` tool results recorded (what a killed agent loop leaves), copies it twice, and times
``recover_interrupted`` on one copy as it is (each attempt closed with the packet its events make,
one transaction per batch) and on the other with the packet step switched off: the baseline, in
the same run and at the same load. Prints both, their ratio, and the packets written.

Run: ``.venv/bin/python benchmarks/bench_recovery_evidence.py --tasks 1000``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from core.config import load_settings
from core.domain.event_payloads import RunStart, ToolResultRecord
from core.store import new_event
from core.tasks import recovery
from core.workspace import Workspace

DEAD_RUNNER = f"{socket.gethostname()}:999999999"  # this host, a pid that cannot exist


async def build(db: Path, tasks: int, results: int) -> None:
    ws = await Workspace.open(load_settings(db_url=f"sqlite:///{db}"))
    store = ws.store
    for i in range(tasks):
        task = await store.create_task(f"Question {i}?")
        assert task.main_session_id is not None
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=f"Question {i}?")
        started = new_event(RunStart(model="scripted/agent", run_kind="agent", attempt_id=attempt.id))
        run = await store.start_run(
            session_id=task.main_session_id,
            kind="agent",
            model="scripted/agent",
            started=started,
            task_id=task.id,
            attempt_id=attempt.id,
        )
        found = [
            new_event(
                ToolResultRecord(tool_name="search_corpus", tool_call_id=f"call_0_{k}", content_chars=400),
                content=f"result {k} of task {i}: " + "evidence text " * 28,
            )
            for k in range(results)
        ]
        await store.commit_events(task.main_session_id, found, run_id=run.id, task_id=task.id)
    await ws.close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tasks SET status = 'running', runner = ?, attempt_count = 1", (DEAD_RUNNER,))
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the copies are of the main file alone


async def recover(db: Path, *, with_evidence: bool) -> tuple[float, int]:
    ws = await Workspace.open(load_settings(db_url=f"sqlite:///{db}"))
    names = vars(recovery)  # the module's globals: what recover_interrupted looks the step up in
    original = names["unpacked_packets"]

    async def none(store: object, attempts: object) -> dict[str, dict[str, object]]:
        return {}

    if not with_evidence:
        names["unpacked_packets"] = none
    try:
        started = time.perf_counter()
        recovered = await recovery.recover_interrupted(ws)
        wall = time.perf_counter() - started
    finally:
        names["unpacked_packets"] = original
        await ws.close()
    assert len(recovered) > 0
    with sqlite3.connect(db) as conn:
        packets = conn.execute("SELECT count(*) FROM attempts WHERE packet IS NOT NULL").fetchone()[0]
    return wall, int(packets)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--results", type=int, default=2, help="tool results per crashed attempt")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "built.sqlite3"
        await build(source, args.tasks, args.results)
        figures: dict[bool, list[float]] = {True: [], False: []}
        written = 0
        for _ in range(args.repeats):
            for with_evidence in (False, True):  # alternate, so both see the same load
                copy = Path(tmp) / f"copy-{with_evidence}.sqlite3"
                shutil.copy(source, copy)
                wall, packets = await recover(copy, with_evidence=with_evidence)
                figures[with_evidence].append(wall)
                written = packets if with_evidence else written
                copy.unlink()
    base, new = statistics.median(figures[False]), statistics.median(figures[True])
    print(f"{args.tasks} crashed tasks, {args.results} tool results each, median of {args.repeats}:")
    print(f"  recovery without packets (baseline): {base:.2f} s  {[round(x, 2) for x in figures[False]]}")
    print(f"  recovery closing attempts with packets: {new:.2f} s  {[round(x, 2) for x in figures[True]]}")
    print(f"  ratio {new / base:.2f}x; packets written {written}")


if __name__ == "__main__":
    asyncio.run(main())
