"""Judge calibration over a large workspace of decided tasks (aim: 100,000 under 2 s).

Each task has one attempt, one verdict (validator model, category and warnings in its debug) and
one analyst decision; one in fifty also has an analyst override, one in a hundred a decision
undone and made again, one in a hundred a reopened decision, one in two hundred a blind first
judgement, one in five hundred a second review, and one in four its verdict's two citations marked
by an analyst (one in twenty marked again). Tasks go in through ``Store.import_records``
(core/store/bulk.py) in batches, then the full ``calibration --json`` (``calibrate`` with its
rates, drift and judgements, then the JSON text) runs three times, with a 5 ms heartbeat on the
loop measuring its longest stall. With ``--desk`` the figures with their cases (what the desk's
Calibration window asks for) are computed both on the loop (the baseline) and the desk's way, in
its worker thread (``desktop/views/insight/calibration_worker.py``) while the loop only awaits them,
and the window's own part (filling its tables from the figures, on the GUI thread) is timed too,
offscreen.

Run: ``.venv/bin/python benchmarks/bench_calibration.py --tasks 100000 [--db URL] [--desk]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import scratch_dir
from core.calibration import Calibration, calibrate
from core.domain.facts import EventKind
from core.domain.records import (
    AttemptRecord,
    EventRecord,
    FeedbackRecord,
    SessionRecord,
    TaskRecord,
    ValidationRecord,
)
from core.store import Store, TaskImport

T = TypeVar("T")
STATUSES = ["accepted"] * 6 + ["rejected", "rejected", "insufficient_evidence", "validator_error"]
ACTIONS = ["satisfied"] * 6 + ["revise", "revise", "abandon", "satisfied"]
CATEGORIES = ["none", "goal_missed", "incomplete", "rule_violation"]
WARNING = [{"code": "unverified-citations", "message": "1 of 2 quotes not found", "count": 1, "total": 2}]


def one_task(i: int, now: datetime) -> TaskImport:
    tid, aid, sid = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
    at = now - timedelta(minutes=i)
    status = STATUSES[i % len(STATUSES)]
    action = ACTIONS[(i * 7) % len(ACTIONS)]
    task = TaskRecord(
        id=tid, title=f"Task {i}", text=f"Question {i}", status="closed" if action == "satisfied" else "abandoned",
        validation_outcome=None, team_spec=None, output_schema=None, main_session_id=sid, attempt_count=1,
        latest_validation_status=status, latest_score=0.5, latest_category="none", revision_requested_by=None,
        read_only=False, origin=None, runner=None, heartbeat_at=None, version=2, created_at=at, updated_at=at,
    )  # fmt: skip
    attempt = AttemptRecord(
        id=aid, task_id=tid, index=1, trigger="initial", prompt="p", state="finished", finish_reason="stop",
        final_output="answer", validation_status=status, validation_score=0.5, validation_outcome=None,
        packet=None, started_at=at, finished_at=at,
    )  # fmt: skip
    session = SessionRecord(id=sid, task_id=tid, parent_session_id=None, kind="main", label="", created_at=at)
    verdict = ValidationRecord(
        id=uuid.uuid4().hex, task_id=tid, attempt_id=aid, attempt_index=1, status=status, score=0.5,
        category=CATEGORIES[i % len(CATEGORIES)], result={"status": status}, raw_response="{}", prompt=None,
        debug={"validator_model": f"judge-{i % 3}", "validator_version": f"v{i // 4 % 2}",
               "warnings": WARNING if i % 5 == 0 else []}, created_at=at,
    )  # fmt: skip
    decision = FeedbackRecord(
        id=uuid.uuid4().hex, task_id=tid, attempt_id=aid, action=action, prompt=None, note=None,
        reviewer="ana", from_status="awaiting_feedback", to_status="closed", created_at=at + timedelta(seconds=5),
    )  # fmt: skip
    events: list[EventRecord] = []
    feedback = [decision]
    if i % 100 == 1:  # undone, then decided again: only the second decision stands
        undo = decision.model_copy(
            update={"id": uuid.uuid4().hex, "action": "undo", "created_at": at + timedelta(seconds=6)}
        )
        again = decision.model_copy(
            update={"id": uuid.uuid4().hex, "action": "abandon", "created_at": at + timedelta(seconds=7)}
        )
        feedback += [undo, again]
    if i % 100 == 2:  # reopened: no decision stands
        feedback.append(
            decision.model_copy(
                update={"id": uuid.uuid4().hex, "action": "reopen", "created_at": at + timedelta(seconds=6)}
            )
        )
    for phase, every, who in (("blind", 200, "ana"), ("second", 500, "bob")):
        if i % every == 3:
            payload = {
                "attempt_index": 1,
                "attempt_id": aid,
                "reviewer": who,
                "decision": "satisfied",
                "phase": phase,
            }
            events.append(
                EventRecord(
                    id=0, session_id=sid, run_id=None, task_id=tid, seq=len(events) + 1,
                    kind=EventKind.ANALYST_JUDGEMENT_RECORDED, payload=payload, content=None, created_at=at,
                )
            )  # fmt: skip
    if i % 4 == 0:  # a quarter of the verdicts have their two citations marked; one in 20 re-marked
        marks = [(0, "right"), (1, "wrong" if i % 8 == 0 else "right")] + (
            [(1, "right")] if i % 20 == 0 else []
        )
        for place, mark in marks:
            payload = {
                "attempt_index": 1, "attempt_id": aid, "validation_id": verdict.id, "citation": place,
                "evidence_id": f"E{place + 1}", "mark": mark, "reviewer": "ana",
                "validator_model": f"judge-{i % 3}", "validator_version": f"v{i // 4 % 2}",
            }  # fmt: skip
            events.append(
                EventRecord(
                    id=0, session_id=sid, run_id=None, task_id=tid, seq=len(events) + 1,
                    kind=EventKind.CITATION_MARKED, payload=payload, content=None, created_at=at,
                )
            )  # fmt: skip
    if i % 50 == 0:
        payload = {"attempt_index": 1, "attempt_id": aid, "status": "rejected", "category": "goal_missed",
                   "note": "", "reviewer": "ana"}  # fmt: skip
        events.append(
            EventRecord(
                id=0,
                session_id=sid,
                run_id=None,
                task_id=tid,
                seq=len(events) + 1,
                kind=EventKind.ANALYST_VERDICT_RECORDED,
                payload=payload,
                content=None,
                created_at=at + timedelta(seconds=9),
            )
        )
    return TaskImport(
        task=task,
        attempts=[attempt],
        sessions=[session],
        events=events,
        validations=[verdict],
        feedback=feedback,
    )


class Heartbeat:
    """A 5 ms tick on the loop: the longest gap is how long the GUI would have stood still.

    ``longest_cpu`` is the loop thread's own CPU time in its longest stretch between two ticks:
    what the work costs the GUI thread, independent of how many other processes share the cores
    (on a loaded machine the wall-clock gap is that stretched by the wait for a core).
    """

    def __init__(self) -> None:
        self.longest = 0.0
        self.longest_cpu = 0.0

    async def run(self) -> None:
        last, last_cpu = time.perf_counter(), time.thread_time()
        while True:
            await asyncio.sleep(0.005)
            now, cpu = time.perf_counter(), time.thread_time()
            self.longest = max(self.longest, now - last - 0.005)
            self.longest_cpu = max(self.longest_cpu, cpu - last_cpu)
            last, last_cpu = now, cpu


def desk_render(cal: Calibration) -> float:
    """Seconds the Calibration window takes to show computed figures (GUI thread, offscreen)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from desktop.views.insight.calibration import CalibrationView

    app = QApplication.instance() or QApplication([])
    view = CalibrationView(None, None)  # type: ignore[arg-type]  # only shows figures here
    view.resize(1200, 800)
    view.show()
    app.processEvents()
    t0 = time.perf_counter()
    view.show_calibration(cal)
    app.processEvents()  # the repaint is part of the stall
    took = time.perf_counter() - t0
    view.close()
    return took


async def stall_of(work: Awaitable[T]) -> tuple[T, float, float, float]:
    """``work``'s result, its time, and the loop's longest stall meanwhile (the GUI's, on the
    desk), wall clock and the loop thread's CPU (``Heartbeat``)."""
    beats = Heartbeat()
    ticker = asyncio.create_task(beats.run())
    t0 = time.perf_counter()
    result = await work
    took = time.perf_counter() - t0
    ticker.cancel()
    return result, took, beats.longest, beats.longest_cpu


async def sql_floor(store: Store) -> int:
    """The least any calibration must do: one pass over every decision beside its verdict."""
    from sqlalchemy import func, select

    from core.store.models import FeedbackRow, ValidationRow

    model = ValidationRow.debug["validator_model"].as_string()
    q = (
        select(ValidationRow.status, FeedbackRow.action, model, func.count())
        .select_from(FeedbackRow)
        .outerjoin(ValidationRow, ValidationRow.attempt_id == FeedbackRow.attempt_id)
        .group_by(ValidationRow.status, FeedbackRow.action, model)
    )
    async with store.read_session() as s:
        return len((await s.execute(q)).all())


async def run(url: str, n: int, desk: bool, reuse: bool) -> None:
    store = await Store.open(url)
    try:
        now = datetime.now(UTC)
        started = time.perf_counter()
        if not reuse:
            for start in range(0, n, 5_000):
                await store.import_records([one_task(i, now) for i in range(start, min(n, start + 5_000))])
            print(f"imported {n:,} decided tasks in {time.perf_counter() - started:.1f} s")
        times, stalls, cpus = [], [], []

        async def full_json() -> tuple[Calibration, str]:
            cal = await calibrate(store)
            return cal, json.dumps(cal.as_json())  # what `calibration --json` prints

        for _ in range(3):
            (cal, text), took, stall, cpu = await stall_of(full_json())
            times.append(took)
            stalls.append(stall)
            cpus.append(cpu)
        floors = [(await stall_of(sql_floor(store)))[1] for _ in range(3)]
        _, _, idle, _ = await stall_of(asyncio.sleep(statistics.median(times)))
        print(f"load average {os.getloadavg()[0]:.1f}; workspace {url}")
        print(
            f"  baseline: the loop's longest stall while idle for as long, in the same run (ms): {idle * 1000:.0f}"
        )
        floor = statistics.median(floors)
        print(
            f"  baseline: one GROUP BY pass over decisions joined to verdicts with the validator model read "
            f"from JSON, median {floor:.3f} s; full --json = {statistics.median(times) / floor:.1f}x that"
        )
        reopened = len(range(2, n, 100))
        assert cal.n == n - reopened, (cal.n, n, reopened)
        assert cal.rates is not None and cal.anchoring is not None and cal.analysts is not None
        assert cal.citations is not None and cal.citations.marked == 2 * len(range(0, n, 4)), cal.citations
        fa = cal.rates.false_accept
        print(
            f"calibration over {cal.n:,} standing decisions ({reopened:,} reopened left out): kappa {cal.kappa:.3f}"
        )
        print(
            f"  false accept {fa.value:.3f} [{fa.ci_low:.3f}, {fa.ci_high:.3f}] of {fa.n:,}; JSON {len(text):,} chars"
        )
        print(
            f"  full --json time (s): min {min(times):.3f} median {statistics.median(times):.3f} max {max(times):.3f}"
        )
        print(
            f"  longest event-loop stall meanwhile (ms): {max(stalls) * 1000:.0f} wall, "
            f"{max(cpus) * 1000:.0f} of the loop thread's CPU"
        )
        if desk:  # the window asks for the cases too (click-through), on the same loop
            import gc

            gc.freeze()  # as the desk does once it is up (desktop/quiet_gc.py)
            from core.calibration import CalibrationFilter
            from desktop.views.insight.calibration_worker import CalibrationWorker

            worker = CalibrationWorker(store.url)
            for how, compute in (
                ("on the loop itself (baseline)", lambda: calibrate(store, cases=True)),
                ("in the desk's worker thread", lambda: worker.calibrate(CalibrationFilter())),
            ):
                window = [await stall_of(compute()) for _ in range(3)]
                print(
                    f"  desk window's figures with cases, {how} (s): "
                    f"median {statistics.median(w[1] for w in window):.3f}; "
                    f"longest loop stall {max(w[2] for w in window) * 1000:.0f} ms wall, "
                    f"{max(w[3] for w in window) * 1000:.0f} ms of the loop thread's CPU"
                )
            renders = [desk_render(window[-1][0]) for _ in range(3)]
            print(f"  desk window showing the figures (GUI thread, ms): longest {max(renders) * 1000:.1f}")
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--db", help="workspace URL (default: a fresh SQLite file)")
    parser.add_argument("--desk", action="store_true", help="also time the desk window showing the figures")
    parser.add_argument("--reuse", action="store_true", help="--db already holds the tasks: do not import")
    args = parser.parse_args()
    if args.reuse and not args.db:
        parser.error("--reuse needs --db")
    url = args.db or str(scratch_dir() / "calibration.sqlite3")
    asyncio.run(run(url, args.tasks, args.desk, args.reuse))


if __name__ == "__main__":
    main()
