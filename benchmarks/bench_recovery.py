"""Start-up crash recovery of a dead desk's thousands of tasks, before and after, in the same run.

A desk killed mid-run of a big batch leaves every task it ran ``running`` or ``validating`` under
its (now dead) process, and the next desk's start awaits ``recover_interrupted`` before its main
window opens. This measures that call, in a fresh process per measurement, on a private copy of a
cached workspace, alternating a baseline source tree (``--base``, e.g. a detached worktree of
``main``) with this one, so both are measured at the same load.

Two situations per repeat:

- ``bare``: the cached workspace as built (tasks claimed by a dead process, no attempt, run or
  session records: recovery creates each task's main session and fails it);
- ``runs``: each dead task also has its main session, its current attempt still running (every
  other one with an answer) and a run left running: what a killed agent loop leaves behind.

The workspace comes from ``bench_desk.py --cache`` (``tasks-<N>/big.sqlite3``); its running
tasks name the process that built it, long gone, which is exactly a dead desk's workspace.

Run: ``.venv/bin/python benchmarks/bench_recovery.py --cache DIR --tasks 1000000 --base ../wt-base``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in a child with the measured tree first on sys.path; prints one JSON line.
_CHILD = """
import asyncio, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from core.config import load_settings
from core.tasks.recovery import recover_interrupted
from core.workspace import Workspace

async def main(url):
    ws = await Workspace.open(load_settings(db_url=url))
    wall, cpu = time.perf_counter(), time.process_time()
    recovered = await recover_interrupted(ws)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    statuses = {}
    for t in recovered:
        statuses[t.status.value] = statuses.get(t.status.value, 0) + 1
    await ws.close()
    print(json.dumps({"wall": wall, "cpu": cpu, "recovered": len(recovered), "statuses": statuses}))

asyncio.run(main(sys.argv[2]))
"""


def add_runs(db: Path) -> int:
    """Give every dead task what a killed agent loop leaves: its session, a running attempt and run."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")  # as SQLAlchemy stores it
    with sqlite3.connect(db) as conn:
        dead = conn.execute(
            "SELECT id, attempt_count FROM tasks WHERE status IN ('running', 'validating')"
        ).fetchall()
        for i, (task_id, count) in enumerate(dead):
            session, attempt, run = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
            conn.execute(
                "INSERT INTO sessions (id, task_id, kind, label, next_seq, created_at) "
                "VALUES (?, ?, 'main', 'main', 1, ?)",
                (session, task_id, now),
            )
            conn.execute("UPDATE tasks SET main_session_id = ? WHERE id = ?", (session, task_id))
            conn.execute(
                'INSERT INTO attempts (id, task_id, "index", trigger, prompt, state, final_output, '
                "started_at) VALUES (?, ?, ?, 'initial', 'p', 'running', ?, ?)",
                (attempt, task_id, max(count, 1), "an answer" if i % 2 else None, now),
            )
            conn.execute(
                "INSERT INTO runs (id, session_id, task_id, attempt_id, kind, model, state, started_at) "
                "VALUES (?, ?, ?, ?, 'agent', 'scripted/agent', 'running', ?)",
                (run, session, task_id, attempt, now),
            )
        return len(dead)


def measure(root: Path, source: Path, scratch: Path, situation: str) -> dict[str, object]:
    db = scratch / "ws.sqlite3"
    _remove(db)  # a previous run's -wal beside a fresh copy would be replayed into it
    shutil.copyfile(source, db)
    if situation == "runs":
        add_runs(db)
    env = {**os.environ, "EVIDENCE_DESK_CONFIG_FILE": os.devnull + "/bench.toml", "PYTHONPATH": str(root)}
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), f"sqlite+aiosqlite:///{db}"],
        env=env,
        cwd=scratch,
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    figures["load"] = Path("/proc/loadavg").read_text().split()[0]
    _remove(db)
    return figures


def _remove(db: Path) -> None:
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        path.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", required=True, help="bench_desk.py's cache folder (read, copied per run)")
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--base", required=True, help="source tree of the baseline (e.g. a worktree of main)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--situations", default="bare,runs")
    args = parser.parse_args()
    source = Path(args.cache) / f"tasks-{args.tasks}" / "big.sqlite3"
    if not source.is_file():
        raise SystemExit(f"no cached workspace at {source}: build it with bench_desk.py --cache first")
    trees = {"before": Path(args.base).resolve(), "after": ROOT}
    # Beside the cache, not in /tmp: a 1M-task copy is 1.5 GB, and the cache's disk has room for it.
    scratch = Path(tempfile.mkdtemp(prefix="recovery-scratch-", dir=args.cache))
    try:
        for situation in args.situations.split(","):
            runs: dict[str, list[dict[str, object]]] = {"before": [], "after": []}
            for i in range(args.repeats):
                for name, tree in trees.items():  # alternated: both see the same load
                    figures = measure(tree, source, scratch, situation)
                    runs[name].append(figures)
                    print(f"{situation} #{i + 1} {name}: {json.dumps(figures)}", flush=True)
            for name, found in runs.items():
                walls = sorted(float(str(f["wall"])) for f in found)
                print(
                    f"{situation} {name}: recover {found[0]['recovered']} tasks of {args.tasks:,}: "
                    f"min {walls[0]:.2f} s, median {statistics.median(walls):.2f} s, max {walls[-1]:.2f} s "
                    f"(loads {', '.join(str(f['load']) for f in found)})"
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
