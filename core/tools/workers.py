"""Daemon threads for blocking tools, kept between calls.

Starting a thread makes the event loop wait until the OS has run it (``Thread.start`` blocks on
the new thread's "started" signal): a tenth of a millisecond on a quiet machine, milliseconds on a
busy one, paid on every tool call of every turn. Idle workers are reused instead, and the
guarantees of a thread per call stay: a call never waits for another call's worker (a busy worker
is never handed a second job), workers are daemons (a hung tool cannot keep the program from
exiting), and the worker of a call that was abandoned (timed out or cancelled) exits when the call
finally returns instead of coming back to the pool.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

IDLE_S = 60.0  # an idle worker exits after this long without work
IDLE_NAME = "tool-idle"

Job = Callable[[], tuple[bool, Callable[[], None]]]
"""Runs one call; returns whether the worker may take another (not once the call was abandoned)
and how to hand the outcome over. The worker is back in the pool before it hands the outcome over,
so the caller's next call finds it idle instead of starting a thread."""


class _Worker:
    __slots__ = ("jobs", "pool", "thread")

    def __init__(self, pool: DaemonWorkers) -> None:
        self.pool = pool
        self.jobs: queue.SimpleQueue[tuple[str, Job]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name=IDLE_NAME, daemon=True)

    def _serve(self) -> None:
        thread = threading.current_thread()
        while True:
            try:
                name, job = self.jobs.get(timeout=self.pool.idle_s)
            except queue.Empty:
                if self.pool._retire(self):
                    return
                name, job = self.jobs.get()  # taken from the idle list just now: its job is on the way
            thread.name = f"tool-{name}"  # as a thread per call was named: what a stack dump shows
            reusable, deliver = job()
            thread.name = IDLE_NAME
            if reusable:
                self.pool._park(self)
            deliver()
            if not reusable:
                return


class DaemonWorkers:
    """A growing set of daemon threads, one per call in flight; ``started`` counts threads ever made."""

    def __init__(self, *, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self.started = 0
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def submit(self, name: str, job: Job) -> None:
        """Run ``job`` on an idle worker, or on a new one when every worker is busy."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            if worker is None:
                self.started += 1
        if worker is not None:
            worker.jobs.put((name, job))
            return
        worker = _Worker(self)
        worker.jobs.put((name, job))
        worker.thread.start()

    def _park(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def _retire(self, worker: _Worker) -> bool:
        """Leave the pool after idling; False when a caller took this worker in the meantime."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False


__all__ = ["IDLE_NAME", "DaemonWorkers", "Job"]
