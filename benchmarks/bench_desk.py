"""Desk responsiveness at several workspace sizes (headless, ``QT_QPA_PLATFORM=offscreen``).

For each size, three runs (min / median / max), with the raw-SQL floor of the same queries
(stdlib sqlite3, hand-written SQL) measured in the same run:

1. cold start to a painted window, to a filled queue and to its rows painted (fresh processes),
   and to the store's first reload of that queue painted in the main window (the desk ready:
   selection opens a task, review keys act), twice per run: the first start after an install that left our modules without bytecode (they
   compile from source, as an editable install's first start does), and a later start with their
   bytecode cached (any start after the first, ``make run``'s compiled tree, a wheel or the
   PyInstaller bundle);
2. keystroke latency while typing a filter (first pages shown), the time until the background
   count makes every header exact, and the loop's longest stall meanwhile (5 ms heartbeat);
3. one live update (a task leaves needs review), without and with a text filter;
4. 3,000 change notices at once (crash recovery): time to settle, reloads caused, errors shown.

``--extras`` adds the 10 MB evidence viewer, the loop stall during a three-node team run and the
GUI thread's stall selecting a task with two 20,000-word attempts (``_diff_stall.py``).
Tasks are inserted with SQLAlchemy Core bulk inserts (not ``create_task`` calls).

Run: ``.venv/bin/python benchmarks/bench_desk.py --tasks 10000,100000,1000000``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ["EVIDENCE_DESK_CONFIG_FILE"] = os.devnull + "/evidence-desk-bench.toml"
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from benchmarks._desk_start import adopt_running, cold_start, desk_sources
from benchmarks._diff_stall import ANSWER_WORDS, diff_selection_stall
from core.tools.registry import ToolResult  # module level: tool annotations resolve here
from desktop.presentation import GROUPS as GROUPS_LOOK

STATUS_MIX = [
    ("needs_review", 0.04),
    ("awaiting_feedback", 0.08),
    ("needs_revision", 0.01),
    ("running", 0.002),
    ("validating", 0.001),
    ("open", 0.02),
    ("failed", 0.03),
    ("closed", 0.80),
    ("abandoned", 0.017),
]
WORDS = [
    "tide",
    "moon",
    "harbour",
    "revenue",
    "contract",
    "supplier",
    "report",
    "gauge",
    "survey",
    "ledger",
    "forecast",
    "audit",
]


async def build_workspace(url: str, n: int) -> float:
    from sqlalchemy import insert

    from core.store import Store
    from core.store.models import TaskRow

    store = await Store.open(url)
    started = time.perf_counter()
    now = datetime.now(UTC)
    cumulative: list[tuple[float, str]] = []
    acc = 0.0
    for status, share in STATUS_MIX:
        acc += share
        cumulative.append((acc, status))
    runner = f"{socket.gethostname()}:{os.getpid()}"
    rows: list[dict[str, Any]] = []
    for i in range(n):
        frac = (i * 0.6180339887) % 1.0
        status = next((s for edge, s in cumulative if frac < edge), "closed")
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)]
        finished = status in ("needs_review", "awaiting_feedback", "closed", "needs_revision")
        rows.append(
            {
                "id": uuid.uuid4().hex,
                "title": f"Task {i}: {a} and {b}",
                "text": f"Question {i} about the {a} {b} records, with enough words to look like a real task.",
                "status": status,
                "validation_outcome": (
                    ("force_accepted" if status == "needs_review" else "accepted") if finished else None
                ),
                "attempt_count": 1 + i % 3 if status != "open" else 0,
                "latest_score": round((i % 100) / 100, 2) if finished else None,
                "latest_category": "none" if finished else None,
                "read_only": False,
                # Rows "running" in this (live) benchmark process, so start-up recovery leaves them be.
                "runner": runner if status in ("running", "validating") else None,
                "version": 1,
                "created_at": now - timedelta(seconds=n - i),
                "updated_at": now - timedelta(seconds=n - i),
            }
        )
    async with store.write_engine.begin() as conn:
        for start in range(0, n, 20_000):
            await conn.execute(insert(TaskRow), rows[start : start + 20_000])
    elapsed = time.perf_counter() - started
    await store.close()
    return elapsed


def litellm_import() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import litellm"], check=True, env=os.environ, capture_output=True)
    return time.perf_counter() - started


KEYSTROKES = "moon gauge"  # the text of one task in twelve (see build_workspace)


async def _settled(model: Any) -> None:
    """Until every group header shows an exact count (the background count has landed)."""
    while not all(model.group_index(g.key).data().split("(")[-1][:1].isdigit() for g in GROUPS_LOOK):  # noqa: ASYNC110
        await asyncio.sleep(0.002)  # a benchmark's poll: the model has no "counts known" signal


async def desk_figures(url: str) -> dict[str, float]:
    """Keystrokes, the loop's longest stall while typing, one live update, a 3,000-task recovery.

    Everything runs in this process on the qasync loop, as in the desk: the model asks core,
    core asks the store; a 5 ms QTimer heartbeat measures how long the loop went unserved.
    """
    from PySide6.QtCore import QTimer
    from sqlalchemy import select, update

    from core.domain.queue import QueueFilter
    from core.domain.status import TaskStatus
    from core.store import Store
    from core.store.models import TaskRow
    from core.tasks.queue import TaskQueue
    from desktop.models.queue_model import TaskQueueModel
    from desktop.ops import CoreOps
    from desktop.quiet_gc import freeze_long_lived
    from desktop.views.queue.view import QueueView

    store = await Store.open(url)
    freeze_long_lived()  # as the desk does once its window is up (desktop/app.py)
    failures: list[str] = []
    ops = CoreOps()
    ops.sig_failed.connect(lambda what, msg: failures.append(f"{what}: {msg}"))
    out: dict[str, float] = {}
    try:
        model = TaskQueueModel(TaskQueue(store), ops)
        # The queue pane as the desk first shows it (1400x860 window, 640 pixels for the queue):
        # its resets and layouts run on the loop too, and its height sets the rows per group.
        view = QueueView(model)
        view.resize(640, 800)
        view.show()
        started = time.perf_counter()
        await model.refresh()
        out["warm_refresh"] = time.perf_counter() - started

        gaps: list[float] = []
        last = [time.perf_counter()]

        def beat() -> None:
            now = time.perf_counter()
            gaps.append(now - last[0])
            last[0] = now

        timer = QTimer()
        timer.setInterval(5)
        timer.timeout.connect(beat)
        timings: list[float] = []
        typed = ""
        last[0] = time.perf_counter()
        timer.start()
        for ch in KEYSTROKES:
            typed += ch
            started = time.perf_counter()
            await model.set_filter(QueueFilter(text=typed))
            timings.append(time.perf_counter() - started)
        started = time.perf_counter()
        await _settled(model)
        out["counts_known"] = time.perf_counter() - started
        timer.stop()
        out["key_median"] = statistics.median(timings)
        out["key_max"] = max(timings)
        out["stall"] = max(gaps) if gaps else float("nan")

        # One live update: a task moves from needs review to closed, as an analyst's decision does.
        for label, flt in (("live", QueueFilter()), ("live_filtered", QueueFilter(text="moon"))):
            await model.set_filter(flt)
            await _settled(model)
            moves = []
            for task_id in model.group_task_ids("needs_review")[:5]:
                await store.update_task(task_id, status=TaskStatus.CLOSED)
                started = time.perf_counter()
                await model.update_task(task_id)
                moves.append(time.perf_counter() - started)
            out[label] = statistics.median(moves)

        # Crash recovery: 3,000 tasks change in one statement and 3,000 notices arrive at once.
        await model.set_filter(QueueFilter())
        async with store.read_session() as s:
            ids = list(
                (await s.scalars(select(TaskRow.id).where(TaskRow.status == "closed").limit(3000))).all()
            )
        async with store.write_engine.begin() as conn:
            await conn.execute(update(TaskRow).where(TaskRow.id.in_(ids)).values(status="failed"))
        before = model.refreshes_started
        failed_before = len(failures)
        started = time.perf_counter()
        waits = [model.update_task(task_id) for task_id in ids]
        await asyncio.gather(*waits)
        out["recovery"] = time.perf_counter() - started
        out["recovery_refreshes"] = model.refreshes_started - before
        out["recovery_errors"] = len(failures) - failed_before
        async with store.write_engine.begin() as conn:  # back as it was, for the next run
            await conn.execute(update(TaskRow).where(TaskRow.id.in_(ids)).values(status="closed"))
        view.close()
        return out
    finally:
        await store.close()


def sql_floor(path: Path, page: int = 50) -> dict[str, float]:
    """The same first pages asked with the stdlib sqlite3 and hand-written SQL: the floor."""
    import sqlite3

    from core.domain.queue import QUEUE_GROUPS

    con = sqlite3.connect(path)
    try:
        groups = [", ".join(f"'{s.value}'" for s in g.statuses) for g in QUEUE_GROUPS]

        def first_pages(extra: str) -> float:
            started = time.perf_counter()
            for statuses in groups:
                con.execute(
                    f"SELECT * FROM tasks WHERE status IN ({statuses}){extra} "
                    f"ORDER BY updated_at DESC, id LIMIT {page + 1}"
                ).fetchall()
            return time.perf_counter() - started

        started = time.perf_counter()
        con.execute("SELECT status, sum(n) FROM task_counts GROUP BY status").fetchall()
        counts = time.perf_counter() - started
        plain = first_pages("")
        # The filtered pages as the store asks them: the index once, in a materialized CTE.
        arms = " UNION ALL ".join(
            f"SELECT * FROM (SELECT * FROM tasks WHERE status IN ({statuses}) AND id IN "
            f"(SELECT task_id FROM hits) ORDER BY updated_at DESC, id LIMIT {page + 1})"
            for statuses in groups
        )
        started = time.perf_counter()
        con.execute(
            "WITH hits AS MATERIALIZED (SELECT task_id FROM tasks_fts WHERE tasks_fts MATCH ?) " + arms,
            (f'"{KEYSTROKES}"',),
        ).fetchall()
        text = time.perf_counter() - started
        # The same pages walked in the queue's order, each row checked (a common word's plan).
        pattern = f"%{KEYSTROKES}%"
        started = time.perf_counter()
        for statuses in groups:
            con.execute(
                f"SELECT * FROM tasks WHERE status IN ({statuses}) AND (title LIKE ? OR text LIKE ?) "
                f"ORDER BY updated_at DESC, id LIMIT {page + 1}",
                (pattern, pattern),
            ).fetchall()
        walk = time.perf_counter() - started
        started = time.perf_counter()
        con.execute(f"SELECT count(*) FROM tasks_fts WHERE tasks_fts MATCH '\"{KEYSTROKES}\"'").fetchall()
        fts_count = time.perf_counter() - started
        return {
            "floor_first_pages": counts + plain,
            "floor_filter_pages": text,
            "floor_filter_walk": walk,
            "floor_fts_count": fts_count,
        }
    finally:
        con.close()


def open_big_evidence() -> tuple[float, str]:
    line = "evidence line with a measured value 12.5 m at the harbour gauge; " * 2 + "\n"
    text = line * (10_000_000 // len(line))
    try:
        from desktop.widgets.text_viewer import TextViewer
    except ImportError:
        from PySide6.QtWidgets import QPlainTextEdit

        plain = QPlainTextEdit()
        plain.resize(700, 500)
        plain.show()
        started = time.perf_counter()
        plain.setPlainText(text)
        plain.repaint()
        return time.perf_counter() - started, "QPlainTextEdit (text viewer missing)"
    viewer = TextViewer()
    viewer.resize(700, 500)
    viewer.show()
    started = time.perf_counter()
    viewer.set_text(text)
    viewer.repaint()
    elapsed = time.perf_counter() - started
    viewer.close()
    return elapsed, "desktop.widgets.text_viewer.TextViewer"


async def _lookup(query: str) -> ToolResult:
    """Look something up (instant; the benchmark measures the loop, not tools)."""
    return ToolResult(content=f"result for {query} " * 200)


async def loop_stall(tmp: Path) -> tuple[float, float, int]:
    from PySide6.QtCore import QTimer

    from core.config import load_settings
    from core.events import EventBus
    from core.llm import LLMGateway
    from core.llm.gateway import warm_up_litellm
    from core.runtime import RunContext
    from core.store import Store
    from core.team import TeamPlan, TeamScheduler
    from core.tools.registry import ToolRegistry

    script = tmp / "stall.json"
    conversations: list[dict[str, Any]] = [
        {
            "model": "agent",
            "match": rf"\bNODE{i}\b",
            "turns": [
                {"tool_calls": [{"name": "lookup", "arguments": {"query": f"n{i}-{t}"}}], "delay_s": 0.15}
                for t in range(3)
            ]
            + [{"content": f"NODE{i} answer", "delay_s": 0.15}],
        }
        for i in range(3)
    ]
    script.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    settings = load_settings(script=script, max_parallel_team_nodes=3)
    reg = ToolRegistry()
    reg.register(_lookup, name="lookup")
    await asyncio.to_thread(warm_up_litellm)
    store = await Store.open(f"sqlite+aiosqlite:///{tmp / 'stall.sqlite3'}")
    plan = TeamPlan.model_validate(
        {
            "id": "stall",
            "mode": "parallel",
            "nodes": [
                {"id": f"n{i}", "role": "researcher", "task": f"study NODE{i}", "tools": ["lookup"]}
                for i in range(3)
            ],
        }
    )

    async def one_run() -> float:
        task = await store.create_task("stall benchmark")
        attempt = await store.create_attempt(task.id, 1, trigger="start", prompt=task.text)
        main = await store.create_session(task_id=task.id, kind="main")
        ctx = RunContext(
            store=store, gateway=LLMGateway(settings), tools=reg, settings=settings, bus=EventBus()
        )
        scheduler = TeamScheduler(ctx)
        started = time.perf_counter()
        team = await scheduler.run(
            plan, task_text=task.text, task_id=task.id, attempt_id=attempt.id, parent_session_id=main.id
        )
        if any(r.status != "succeeded" for r in team.node_results):
            raise RuntimeError("stall benchmark nodes failed")
        return time.perf_counter() - started

    try:
        await one_run()  # warm-up: first litellm call paths, regexes, caches
        gaps: list[float] = []
        last = [time.perf_counter()]
        timer = QTimer()
        timer.setInterval(5)

        def beat() -> None:
            now = time.perf_counter()
            gaps.append(now - last[0])
            last[0] = now

        timer.timeout.connect(beat)
        timer.start()
        wall = await one_run()
        timer.stop()
        return max(gaps) if gaps else float("nan"), wall, len(gaps)
    finally:
        await store.close()


FIGURES = [
    # (key, label, unit scale, aim)
    ("paint", "cold start to first paint", 1000, "< 500 ms"),
    ("paint_rows", "  task rows in that first paint", 1, ">= one screen"),
    ("queue", "cold start to live queue filled", 1000, "< 500 ms, flat in N"),
    ("queue_painted", "  live queue's rows painted", 1000, "< 500 ms, flat in N"),
    ("queue_painted_cpu", "  the desk's CPU time by then (all threads)", 1000, "load-independent"),
    ("ready", "cold start to the store's reload painted (desk ready)", 1000, "flat in N"),
    ("ready_cpu", "  the desk's CPU time by then (all threads)", 1000, "load-independent"),
    ("queue_pyc", "  bytecode cached: live queue filled", 1000, "< 500 ms, flat in N"),
    ("queue_painted_pyc", "  bytecode cached: live queue's rows painted", 1000, "< 500 ms, flat in N"),
    ("queue_painted_cpu_pyc", "  bytecode cached: the desk's CPU time by then", 1000, "load-independent"),
    ("ready_pyc", "  bytecode cached: desk ready", 1000, "flat in N"),
    ("idle_rss", "idle RSS after the live queue filled + 10 s", 1, "< 250 MB at 1M, flat"),
    ("idle_rows", "  rows the model holds then", 1, "a few pages"),
    ("idle_long_rss", "idle RSS after the live queue filled + --idle-long", 1, "< 250 MB at 1M, flat"),
    ("idle_long_rows", "  rows the model holds then", 1, "a few pages"),
    ("warm_refresh", "queue refresh, no filter (warm)", 1000, ""),
    ("floor_first_pages", "  raw-SQL floor: counts + 8 first pages (50 rows)", 1000, ""),
    ("key_median", "keystroke median (first pages shown)", 1000, "< 100 ms"),
    ("key_max", "keystroke max", 1000, "< 250 ms"),
    ("floor_filter_pages", "  raw-SQL floor: 8 filtered first pages (index matches)", 1000, ""),
    ("floor_filter_walk", "  raw-SQL floor: 8 filtered first pages (walk order)", 1000, ""),
    ("counts_known", "exact filtered counts after last key", 1000, "background"),
    ("floor_fts_count", "  raw-SQL floor: bare FTS count", 1000, ""),
    ("stall", "longest loop stall while typing", 1000, "< 50 ms"),
    ("live", "one live update, no filter", 1000, "< 20 ms"),
    ("live_filtered", "one live update, text filter", 1000, "< 20 ms"),
    ("recovery", "3,000 notices at once, settled", 1000, "one refresh"),
    ("recovery_refreshes", "  reloads those notices caused", 1, "1"),
    ("recovery_errors", "  errors shown (pool or other)", 1, "0"),
]


def report(n: int, runs: list[dict[str, float]]) -> None:
    print(f"\n{n:,} tasks, {len(runs)} runs: min / median / max")
    for key, label, scale, aim in FIGURES:
        values = sorted(r[key] * scale for r in runs if key in r)
        if not values:
            continue
        unit = " ms" if scale == 1000 else ""
        if key in ("idle_rss", "idle_long_rss"):
            unit = " MB"
        mid = statistics.median(values)
        print(f"  {label:42s} {values[0]:8.1f} / {mid:8.1f} / {values[-1]:8.1f}{unit}  {aim}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", default="10000,100000", help="comma-separated workspace sizes")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle before reading RSS (0: skip)")
    parser.add_argument(
        "--idle-long",
        type=float,
        default=0.0,
        help="also read RSS after this many idle seconds in the same process (300: the issue's 5 minutes)",
    )
    parser.add_argument(
        "--extras", action="store_true", help="also the 10 MB viewer, team-run and diff stalls"
    )
    parser.add_argument(
        "--cache",
        default="",
        help="keep each size's workspace in this folder and reuse it (a 1M build takes minutes)",
    )
    parser.add_argument(
        "--start-only",
        action="store_true",
        help="only the cold starts (queue filled and desk ready, with and without bytecode) and idle RSS",
    )
    args = parser.parse_args()
    sizes = [int(x) for x in str(args.tasks).replace("_", "").split(",") if x]
    import qasync

    from desktop.app import make_application

    app = make_application()
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    lite = litellm_import()
    print(f'python -c "import litellm": {lite * 1000:.0f} ms (same run, for comparison)')
    sources_dir = Path(tempfile.mkdtemp(prefix="evidence-desk-src-"))
    sources = {bytecode: desk_sources(sources_dir, bytecode=bytecode) for bytecode in (False, True)}
    with loop:
        try:
            run_sizes(loop, sizes, args, sources)
        finally:
            shutil.rmtree(sources_dir, ignore_errors=True)


def run_sizes(loop: Any, sizes: list[int], args: argparse.Namespace, sources: dict[bool, Path]) -> None:
    """Each size's workspace (built or reused), its runs and their report; then the extras."""
    for n in sizes:
        tmp = (
            Path(args.cache) / f"tasks-{n}"
            if args.cache
            else Path(tempfile.mkdtemp(prefix="evidence-desk-bench-"))
        )
        tmp.mkdir(parents=True, exist_ok=True)
        path = tmp / "big.sqlite3"
        url = f"sqlite+aiosqlite:///{path}"
        if (tmp / "built").exists():
            print(f"desk benchmark: {n:,} tasks reused from {tmp}")
            adopt_running(path)
        else:
            path.unlink(missing_ok=True)
            insert_s = loop.run_until_complete(build_workspace(url, n))
            (tmp / "built").write_text(str(insert_s), encoding="utf-8")
            print(f"desk benchmark: {n:,} tasks bulk-inserted in {insert_s:.2f} s ({tmp})")
        runs = []
        for _ in range(args.runs):
            # First start (no bytecode) and later start (bytecode cached) side by side, same load.
            figures = dict(cold_start(url, tmp, args.idle, args.idle_long, root=sources[False]))
            cached = cold_start(url, tmp, root=sources[True])
            figures.update(
                {
                    f"{k}_pyc": cached[k]
                    for k in ("queue", "queue_painted", "queue_painted_cpu", "ready")
                    if k in cached
                }
            )
            if not args.start_only:
                figures.update(loop.run_until_complete(desk_figures(url)))
                figures.update(sql_floor(path))
            runs.append(figures)
        report(n, runs)
    if args.extras:
        big_s, viewer = open_big_evidence()
        print(f"open a 10 MB evidence item: {big_s * 1000:.0f} ms ({viewer}; aim < 500 ms)")
        stall, wall, beats = loop.run_until_complete(loop_stall(Path(tempfile.mkdtemp())))
        print(f"longest loop stall, 3 parallel nodes: {stall * 1000:.1f} ms ({beats} beats, {wall:.2f} s)")
        d = loop.run_until_complete(diff_selection_stall())
        print(
            f"select a task with two {ANSWER_WORDS:,}-word attempts: GUI thread {d['hidden'] * 1000:.0f} ms with the Diff"
            f" tab hidden, {d['shown'] * 1000:.0f} ms to show the tab (diff painted after"
            f" {d['painted']:.2f} s from a worker, re-shown from the cache in {d['cached'] * 1000:.0f} ms);"
            " the diff itself, paid by every selection before:"
            f" {d['baseline']:.2f} s (x{d['baseline'] / max(d['hidden'], 1e-6):.0f})"
        )


if __name__ == "__main__":
    main()
