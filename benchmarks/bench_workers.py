"""Worker throughput: do 1, 2 and 4 ``evidence-desk worker`` processes scale linearly?

Every task waits on the (scripted) provider for a fixed latency, as real tasks wait on a model, so
a worker with concurrency 1 runs about ``1 / latency`` tasks a second and W workers should run W
times that. Each round starts W real worker processes on a throw-away PostgreSQL server (from
``tests/pg.py``), waits until all W are registered with procrastinate (litellm's import is paid
before the clock starts), queues the tasks with ``evidence-desk batch``, and measures from the
first attempt's start to the last attempt's end, as the database recorded them. Efficiency = throughput(W) /
(W × throughput(1)); the aim is ≥ 0.9.

Run: ``.venv/bin/python benchmarks/bench_workers.py [--tasks-per-worker 12] [--latency 0.5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ["EVIDENCE_DESK_CONFIG_FILE"] = os.devnull + "/evidence-desk-bench.toml"
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.pg import start_server

ROOT = Path(__file__).resolve().parents[1]
VERDICT = json.dumps(
    {"goal_achievement": "g", "completeness": "c", "rule_compliance": "r", "status": "accepted", "score": 0.9}
)


def _scalar(url: str, sql: str) -> object:
    engine = create_engine(make_url(url).set(drivername="postgresql+psycopg"))
    try:
        with engine.connect() as conn:
            return conn.execute(text(sql)).scalar()
    except Exception:
        return None
    finally:
        engine.dispose()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "core.cli", *args]


def one_round(server: object, workers: int, tasks: int, latency: float, folder: Path) -> float:
    """Tasks per second with ``workers`` worker processes (concurrency 1 each)."""
    url = server.create_database(f"bench_workers_{workers}")  # type: ignore[attr-defined]
    script = folder / "script.json"
    script.write_text(
        json.dumps(
            {
                "conversations": [
                    {"model": "agent", "turns": [{"content": "done", "delay_s": latency}]},
                    {"model": "validator", "turns": [{"content": VERDICT}]},
                ]
            }
        )
    )
    rows = folder / f"rows-{workers}.jsonl"
    rows.write_text(
        "".join(json.dumps({"text": f"Task {i} of round {workers}"}) + "\n" for i in range(tasks))
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVIDENCE_DESK_LLM_NUM_RETRIES": "0"}
    base = ("--db", url, "--script", str(script))
    procs = [
        subprocess.Popen(
            _cli("worker", *base, "--concurrency", "1", "--poll", "0.5", "--json"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    try:
        while (_scalar(url, "select count(*) from procrastinate_workers") or 0) < workers:  # type: ignore[operator]
            time.sleep(0.2)
        subprocess.run(_cli("batch", str(rows), *base), env=env, check=True, capture_output=True)
        while (_scalar(url, "select count(*) from attempts where state = 'finished'") or 0) < tasks:  # type: ignore[operator]
            time.sleep(0.05)
        # from the first attempt's start to the last one's end, as the database recorded them
        # (the batch command's own start-up is not the workers' throughput)
        span = "select extract(epoch from max(finished_at) - min(started_at)) from attempts"
        elapsed = float(_scalar(url, span))  # type: ignore[arg-type]
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=120)
    return tasks / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks-per-worker", type=int, default=12)
    parser.add_argument("--latency", type=float, default=0.5, help="provider latency per task, seconds")
    args = parser.parse_args()
    with start_server() as server, tempfile.TemporaryDirectory() as tmp:
        tasks = args.tasks_per_worker * 4
        results = {w: one_round(server, w, tasks, args.latency, Path(tmp)) for w in (1, 2, 4)}
    base = results[1]
    print(f"{tasks} tasks, provider latency {args.latency:.2f} s, one task at a time per worker")
    for w, rate in results.items():
        print(
            f"  {w} worker(s): {rate:5.2f} tasks/s  speed-up {rate / base:4.2f}x  efficiency {rate / (w * base):4.2f}"
        )


if __name__ == "__main__":
    main()
