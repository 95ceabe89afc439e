"""Worker throughput: do 1, 2 and 4 ``evidence-desk worker`` processes scale linearly?

Every task waits on the (scripted) provider for a fixed latency, as real tasks wait on a model, so
a worker with concurrency 1 runs about ``1 / latency`` tasks a second and W workers should run W
times that. Each round starts W real worker processes on a throw-away PostgreSQL server (from
``tests/pg.py``), waits until all W are registered with procrastinate (litellm's import is paid
before the clock starts), queues the tasks with ``evidence-desk batch``, and measures from the
first attempt's start to the last attempt's end, as the database recorded them. Efficiency = throughput(W) /
(W × throughput(1)); the aim is ≥ 0.9.

The same run measures desk-to-desk change latency on PostgreSQL: one workspace records a decision,
a second store's ``ChangeWatcher`` (what an open desk runs) announces it; median and max over
``--writes`` decisions, aim < 1 s. Each worker count runs ``--runs`` times (min/median/max), with
the machine's CPU use, the workers' CPU seconds per task and the load average, so a shortfall can
be told apart: CPU (the workers' ceiling is cores / CPU-per-task) or waiting (queue, locks).

Two more figures of a team workspace:

- **Recovery from a database restart:** two workers run a queue of tasks; ``pg_ctl restart -m
  fast`` cuts every connection; the figure is the time from the restart to the first attempt
  finished after it (database clock both ends), with ``pg_ctl``'s own time beside it.
- **Queueing a batch:** ``evidence-desk batch`` of ``--batch-rows`` rows (10k and 100k by default)
  into a new SQLite workspace and a new PostgreSQL one (tasks and their workers' jobs), wall time
  and the command's CPU seconds, and the PostgreSQL / SQLite ratio measured in the same run (aim
  1.5 at most). Other processes share the machine: the load average is printed beside each.

Run: ``.venv/bin/python benchmarks/bench_workers.py [--tasks-per-worker 12] [--latency 0.5] [--runs 3]
[--batch-rows 10000,100000] [--only throughput,restart,batch]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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


@dataclass
class Round:
    workers: int
    rate: float  # tasks per second
    machine_busy: float  # fraction of all cores busy during the round (every process, PostgreSQL too)
    worker_cpu_per_task: float  # CPU seconds the worker processes spent per task
    load: float  # 1-minute load average at the end of the round


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of a process, seconds (0 once it is gone)."""
    try:
        parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def one_round(server: object, workers: int, tasks: int, latency: float, folder: Path, run: int) -> Round:
    """Throughput of ``workers`` worker processes (concurrency 1 each), with what it cost in CPU."""
    url = server.create_database(f"bench_workers_{workers}_{run}")  # type: ignore[attr-defined]
    script = _write_script(folder, latency)
    rows = folder / f"rows-{workers}-{run}.jsonl"
    rows.write_text(
        "".join(json.dumps({"text": f"Task {i} of round {workers}.{run}"}) + "\n" for i in range(tasks))
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
        cpu_before = sum(_proc_cpu_s(p.pid) for p in procs)
        busy_before = _cpu_busy()
        subprocess.run(_cli("batch", str(rows), *base), env=env, check=True, capture_output=True)
        while (_scalar(url, "select count(*) from attempts where state = 'finished'") or 0) < tasks:  # type: ignore[operator]
            time.sleep(0.05)
        busy_after = _cpu_busy()
        cpu_after = sum(_proc_cpu_s(p.pid) for p in procs)
        # from the first attempt's start to the last one's end, as the database recorded them
        # (the batch command's own start-up is not the workers' throughput)
        span = "select extract(epoch from max(finished_at) - min(started_at)) from attempts"
        elapsed = float(_scalar(url, span))  # type: ignore[arg-type]
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=120)
    busy = (busy_after[0] - busy_before[0]) / max(busy_after[1] - busy_before[1], 1)
    return Round(workers, tasks / elapsed, busy, (cpu_after - cpu_before) / tasks, os.getloadavg()[0])


async def _desk_to_desk(url: str, writes: int) -> list[float]:
    """Seconds from one desk's decision call to the other desk's watcher announcing it, per write.

    Desk A is a workspace whose review service records "satisfied" on a task awaiting feedback;
    desk B is a second store (its own engine and connections) whose ``ChangeWatcher`` LISTENs,
    exactly as an open desk does. The clock runs from before A's write to B's bus notice, so it
    includes A's transaction, the trigger's NOTIFY, the delivery and B's announcement.
    """
    from core.config import load_settings
    from core.domain.status import FeedbackAction, TaskStatus
    from core.events import EventBus, TaskChanged
    from core.store import Store
    from core.store.watch import ChangeWatcher
    from core.tasks.review import ReviewService
    from core.tasks.service import TaskService
    from core.workspace import Workspace

    desk_a = await Workspace.open(load_settings(db_url=url))
    store_b = await Store.open(url)
    bus_b = EventBus()
    seen: dict[str, tuple[int, float]] = {}
    arrived = asyncio.Event()

    def on_notice(event: object) -> None:
        if isinstance(event, TaskChanged):
            seen[event.task_id] = (event.version, time.perf_counter())
            arrived.set()

    bus_b.subscribe(on_notice)
    watcher = ChangeWatcher(store_b, bus_b)
    try:
        tasks = []
        for i in range(writes):
            task = await desk_a.store.create_task(f"Latency probe {i}?")
            tasks.append(await desk_a.store.update_task(task.id, status=TaskStatus.AWAITING_FEEDBACK))
        await watcher.start()
        await watcher.ready.wait()
        review = ReviewService(TaskService(desk_a))
        latencies = []
        for task in tasks:
            arrived.clear()
            started = time.perf_counter()
            await review.feedback(task.id, FeedbackAction.SATISFIED, expected_version=task.version)
            while not (task.id in seen and seen[task.id][0] > task.version):
                await asyncio.wait_for(arrived.wait(), timeout=10)
                arrived.clear()
            latencies.append(seen[task.id][1] - started)
        return latencies
    finally:
        await watcher.close()
        await store_b.close()
        await desk_a.store.close()


def latency_round(server: object, writes: int) -> list[float]:
    url = server.create_database("bench_desk_latency")  # type: ignore[attr-defined]
    return asyncio.run(_desk_to_desk(url, writes))


def _write_script(folder: Path, latency: float) -> Path:
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
    return script


def _wait_for(url: str, sql: str, until: object, bound_s: float = 600.0) -> object:
    """Poll ``sql`` until it returns something ``until`` accepts (a callable); bounded, not timed."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        got = _scalar(url, sql)
        if until(got):  # type: ignore[operator]
            return got
        time.sleep(0.05)
    raise RuntimeError(f"gave up waiting on: {sql}")


def restart_round(server: object, folder: Path, latency: float, tasks: int = 40) -> tuple[float, float]:
    """(seconds from ``pg_ctl restart`` to the first attempt finished after it, pg_ctl's own seconds)."""
    url = server.create_database("bench_restart")  # type: ignore[attr-defined]
    script = _write_script(folder, latency)
    rows = folder / "restart-rows.jsonl"
    rows.write_text("".join(json.dumps({"text": f"Restart task {i}"}) + "\n" for i in range(tasks)))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVIDENCE_DESK_LLM_NUM_RETRIES": "0"}
    base = ("--db", url, "--script", str(script))
    procs = [
        subprocess.Popen(
            _cli("worker", *base, "--concurrency", "1", "--poll", "0.5", "--json"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    try:
        _wait_for(url, "select count(*) from procrastinate_workers", lambda n: (n or 0) >= 2)
        subprocess.run(_cli("batch", str(rows), *base), env=env, check=True, capture_output=True)
        finished = "select count(*) from attempts where state = 'finished'"
        _wait_for(url, finished, lambda n: (n or 0) >= 2)  # the workers are busy: mid-queue
        before = _scalar(url, "select now()")
        started = time.perf_counter()
        server.control.restart()  # type: ignore[attr-defined]
        pg_ctl_s = time.perf_counter() - started
        after = f"select extract(epoch from min(finished_at) - '{before}'::timestamptz) from attempts "
        after += f"where finished_at > '{before}'::timestamptz"
        recovery = float(_wait_for(url, after, lambda s: s is not None))  # type: ignore[arg-type]
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a worker exited over the restart")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=120)
    return recovery, pg_ctl_s


@dataclass
class Queueing:
    seconds: float
    cpu_s: float  # the batch command's own CPU seconds (PostgreSQL's server processes not included)
    load: float


def batch_round(db: str, rows: Path) -> Queueing:
    """``evidence-desk batch`` of ``rows`` into ``db``, as an analyst runs it (a new process)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        _cli("batch", str(rows), "--db", db, "--create", "--json"), env=env, check=True, capture_output=True
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    return Queueing(seconds, cpu, os.getloadavg()[0])


def batch_rounds(server: object, folder: Path, sizes: list[int]) -> None:
    for n in sizes:
        rows = folder / f"batch-{n}.jsonl"
        rows.write_text(
            "".join(
                json.dumps({"text": f"Row {i}: what does it say?", "metadata": {"row": i}}) + "\n"
                for i in range(n)
            )
        )
        sqlite = batch_round(f"sqlite+aiosqlite:///{folder / f'batch-{n}.sqlite3'}", rows)
        pg = batch_round(server.create_database(f"bench_batch_{n}"), rows)  # type: ignore[attr-defined]
        print(
            f"batch of {n} rows: SQLite {sqlite.seconds:.1f} s (CPU {sqlite.cpu_s:.1f} s, load {sqlite.load:.1f}), "
            f"PostgreSQL {pg.seconds:.1f} s with the jobs (CPU {pg.cpu_s:.1f} s, load {pg.load:.1f}); "
            f"PostgreSQL / SQLite {pg.seconds / sqlite.seconds:.2f} (aim <= 1.5)",
            flush=True,
        )


def _cpu_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat: CPU use over a round."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _summary(values: list[float]) -> str:
    return f"min {min(values):.2f}  median {statistics.median(values):.2f}  max {max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks-per-worker", type=int, default=12)
    parser.add_argument("--latency", type=float, default=0.5, help="provider latency per task, seconds")
    parser.add_argument("--runs", type=int, default=3, help="rounds per worker count (min/median/max)")
    parser.add_argument("--writes", type=int, default=40, help="decisions timed desk to desk")
    parser.add_argument("--batch-rows", default="10000,100000", help="batch sizes queued, comma-separated")
    parser.add_argument(
        "--only", default="throughput,restart,batch", help="which parts to run: throughput, restart, batch"
    )
    args = parser.parse_args()
    parts = set(args.only.split(","))
    cores = os.cpu_count() or 1
    print(f"machine: {cores} core(s), load average {os.getloadavg()[0]:.2f} at start")
    tasks = args.tasks_per_worker * 4
    rounds: dict[int, list[Round]] = {}
    with start_server() as server, tempfile.TemporaryDirectory() as tmp:
        if "restart" in parts:
            recovery, pg_ctl_s = restart_round(server, Path(tmp), args.latency)
            print(
                f"restart recovery: first task finished {recovery:.2f} s after `pg_ctl restart -m fast` "
                f"(pg_ctl itself {pg_ctl_s:.2f} s), 2 workers, load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        if "batch" in parts:
            batch_rounds(server, Path(tmp), [int(n) for n in args.batch_rows.split(",") if n])
        if "throughput" in parts:
            ms = [x * 1000 for x in latency_round(server, args.writes)]
            print(
                f"desk-to-desk change latency on PostgreSQL, {len(ms)} decisions: {_summary(ms)} ms (aim < 1000)"
            )
            for w in (1, 2, 4):
                for r in range(args.runs):  # printed as they finish: a long run interrupted still reports
                    got = one_round(server, w, tasks, args.latency, Path(tmp), r)
                    rounds.setdefault(w, []).append(got)
                    print(
                        f"  round: {w} worker(s) run {r + 1}: {got.rate:.2f} tasks/s, machine busy "
                        f"{got.machine_busy:.0%}, worker CPU {got.worker_cpu_per_task * 1000:.0f} ms/task, "
                        f"load {got.load:.2f}",
                        flush=True,
                    )
    if not rounds:
        return
    base = statistics.median(r.rate for r in rounds[1])
    print(
        f"{tasks} tasks, provider latency {args.latency:.2f} s, one task at a time per worker, {args.runs} run(s)"
    )
    for w, rs in rounds.items():
        rates = [r.rate for r in rs]
        eff = [r.rate / (w * base) for r in rs]
        cpu = statistics.median(r.worker_cpu_per_task for r in rs)
        busy = statistics.median(r.machine_busy for r in rs)
        print(
            f"  {w} worker(s): tasks/s {_summary(rates)}  efficiency {_summary(eff)}  "
            f"machine busy {busy:4.0%}  worker CPU {cpu * 1000:4.0f} ms/task  load {rs[-1].load:.2f}"
        )
    # The CPU budget: W workers at linear speed-up need W x base tasks/s, each costing the workers
    # the CPU measured at W; with PostgreSQL and every other process on the same cores, a machine
    # that is already fully busy cannot give it, and efficiency then measures the machine.
    for w, rs in rounds.items():
        cpu = statistics.median(r.worker_cpu_per_task for r in rs)
        print(
            f"  linear speed-up at {w} worker(s) needs {w * base:5.2f} tasks/s x {cpu * 1000:4.0f} ms = "
            f"{w * base * cpu:4.2f} core(s) for the workers alone, of {cores}"
        )


if __name__ == "__main__":
    main()
