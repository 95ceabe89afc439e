"""Shadow replay: does ``--concurrency`` turn into throughput, and does a replay stall the desk?

A workspace of decided validate-only tasks (answer, packet, analyst decision) is replayed by a
scripted candidate validator answering every verdict after a fixed latency (100 ms), at
concurrency 1, 4 and 8, each as its own candidate (its own shadow session) in one process. The
figure is the speed-up over concurrency 1 as a fraction of the ideal (``c`` for ``c`` verdicts at
once, when the task count is a multiple of ``c``): the time the replay spends beyond the
provider's latency (packet reads, rendering, the event writer) shows up as a ratio below 1.

Then the same replay (concurrency 4) runs in-process on a qasync loop under a QApplication, as
in the desk (the objects start-up built frozen out of the collector's walk, as the desk does:
``desktop/quiet_gc.py``), with a 5 ms timer recording the longest gap between its ticks: the desk's
longest stall while a replay runs, beside the longest garbage collection meanwhile. Min / median /
max over ``--runs`` runs.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_revalidate.py`` (no network).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ["EVIDENCE_DESK_CONFIG_FILE"] = os.devnull + "/evidence-desk-bench.toml"
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from core.config import Settings, load_settings
from core.domain.evidence import TaskEvidencePacket
from core.domain.status import TaskStatus
from core.judge.candidates import load_candidate
from core.judge.replay import ReplaySelection, revalidate
from core.workspace import Workspace

VERDICT = json.dumps(
    {
        "goal_achievement": "met",
        "completeness": "complete",
        "rule_compliance": "no rules",
        "status": "accepted",
        "score": 0.9,
        "issues": [],
        "recommended_revision_prompt": "",
        "category": "none",
        "citations": [],
    }
)
LEVELS = (1, 4, 8)


def _settings(tmp: Path, latency_s: float) -> Settings:
    script = tmp / "script.json"
    names = [f"c{c}" for c in (*LEVELS, 99)]
    conversations = [{"model": "candidate", "turns": [{"content": VERDICT, "delay_s": latency_s}]}]
    script.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    candidates = {n: {"model": "scripted/candidate"} for n in names}
    return load_settings(
        script=script, db_url=f"sqlite+aiosqlite:///{tmp / 'ws.sqlite3'}", validator_candidates=candidates
    )


async def _seed(ws: Workspace, n: int) -> None:
    """``n`` decided tasks, each with one attempt whose answer and packet are stored."""
    store = ws.store
    for i in range(n):
        task = await store.create_task(f"Bench question {i}: what causes tides?")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
        answer = f"Answer {i}: the Moon's gravity."
        packet = TaskEvidencePacket(task_id=task.id, attempt_index=1, final_output=answer)
        await store.update_attempt(attempt.id, final_output=answer, packet=packet.model_dump(mode="json"))
        await store.add_feedback(
            task_id=task.id,
            attempt_id=attempt.id,
            action="satisfied",
            prompt=None,
            note=None,
            reviewer="bench",
            from_status=TaskStatus.AWAITING_FEEDBACK,
            to_status=TaskStatus.CLOSED,
        )


async def _replay(ws: Workspace, settings: Settings, name: str, concurrency: int) -> float:
    candidate = load_candidate(settings, name)
    started = time.perf_counter()
    summary = await revalidate(ws, candidate, ReplaySelection(), concurrency=concurrency)
    wall = time.perf_counter() - started
    if summary.judged != summary.selected or summary.statuses.get("accepted") != summary.judged:
        raise RuntimeError(f"replay {name} did not judge everything: {summary.as_json()}")
    return wall


async def throughput(tasks: int, latency_s: float) -> dict[int, float]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-revalidate-"))
    settings = _settings(tmp, latency_s)
    ws = await Workspace.open(settings)
    try:
        await _seed(ws, tasks)
        await _replay(ws, settings, "c99", 4)  # warm-up: litellm's first call, caches
        return {c: await _replay(ws, settings, f"c{c}", c) for c in LEVELS}
    finally:
        await ws.close()


class _Beats:
    """A 5 ms Qt timer recording the gaps between its ticks: the loop's stalls, as the desk feels them."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self.last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self.beat)

    def beat(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self.last)
        self.last = now

    def __enter__(self) -> _Beats:
        self.last = time.perf_counter()
        self.timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.timer.stop()

    @property
    def worst(self) -> float:
        return max(self.gaps) if self.gaps else float("nan")


class _Collections:
    """The longest garbage collection while the replay runs (``gc.callbacks``): a stall's usual cause."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._started = 0.0

    def _on_gc(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.worst = max(self.worst, time.perf_counter() - self._started)

    def __enter__(self) -> _Collections:
        gc.callbacks.append(self._on_gc)
        return self

    def __exit__(self, *_exc: object) -> None:
        gc.callbacks.remove(self._on_gc)


async def idle_stall(seconds: float) -> float:
    """The same timer on an idle loop for as long: what this machine's load alone costs a tick."""
    with _Beats() as beats:
        await asyncio.sleep(seconds)
    return beats.worst


async def stall(tasks: int, latency_s: float) -> tuple[float, float, float]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-revalidate-stall-"))
    settings = _settings(tmp, latency_s)
    ws = await Workspace.open(settings)
    try:
        await _seed(ws, tasks)
        await _replay(ws, settings, "c99", 4)  # warm-up
        from desktop.quiet_gc import freeze_long_lived

        freeze_long_lived()  # as the desk does once it is up and litellm is imported
        with _Beats() as beats, _Collections() as collections:
            wall = await _replay(ws, settings, "c4", 4)
        return beats.worst, wall, collections.worst
    finally:
        await ws.close()


def _spread(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    v = sorted(x * scale for x in values)
    return f"{v[0]:.{digits}f} / {statistics.median(v):.{digits}f} / {v[-1]:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=48, help="decided tasks (a multiple of 8)")
    parser.add_argument("--latency", type=float, default=0.1, help="the candidate's latency per verdict (s)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import qasync

    from desktop.app import make_application

    app = make_application()
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    fractions: dict[int, list[float]] = {c: [] for c in LEVELS}
    rates: dict[int, list[float]] = {c: [] for c in LEVELS}
    stalls: list[float] = []
    collections: list[float] = []
    idle: list[float] = []
    with loop:
        for _ in range(args.runs):
            walls = loop.run_until_complete(throughput(args.tasks, args.latency))
            for c in LEVELS:
                rates[c].append(args.tasks / walls[c])
                fractions[c].append((walls[1] / walls[c]) / c)
            worst, wall, collected = loop.run_until_complete(stall(args.tasks, args.latency))
            stalls.append(worst)
            collections.append(collected)
            idle.append(loop.run_until_complete(idle_stall(wall)))
    ideal = 1 / args.latency
    print(
        f"{args.tasks} decided tasks, candidate latency {args.latency * 1000:.0f} ms (ideal {ideal:.1f} verdicts/s each)"
    )
    print("min / median / max over", args.runs, "runs")
    for c in LEVELS:
        print(f"concurrency {c}: {_spread(rates[c])} verdicts/s; of ideal {_spread(fractions[c])}")
    print(
        f"desk loop's longest stall during a replay (concurrency 4): {_spread(stalls, 1000, 0)} ms (aim < 50 ms)"
    )
    print(f"  its longest garbage collection: {_spread(collections, 1000, 0)} ms")
    print(
        f"  the same timer on an idle loop for as long (this machine's load alone): {_spread(idle, 1000, 0)} ms"
    )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
