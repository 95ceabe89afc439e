"""Blocking tools run on reused daemon threads: one thread per call in flight, never shared, never kept when abandoned.

Every assertion is on thread identity, counters and events, never on how long anything took.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from core.tools import ToolRegistry
from core.tools.workers import IDLE_NAME, DaemonWorkers


def _registry(gate: threading.Event | None = None, timeout_s: float = 30.0) -> ToolRegistry:
    reg = ToolRegistry(timeout_s=timeout_s)

    def where() -> str:
        """Name the thread that ran the call."""
        return f"{threading.get_ident()} {threading.current_thread().name}"

    def hold(n: int) -> str:
        """Wait for the gate, then name the thread."""
        assert gate is not None
        gate.wait()
        return str(threading.get_ident())

    reg.register(where)
    reg.register(hold)
    return reg


async def test_sequential_calls_reuse_one_daemon_thread_named_for_the_call() -> None:
    reg = _registry()
    first = (await reg.execute("where", {})).content
    answers = [(await reg.execute("where", {})).content for _ in range(20)]
    ident, name = first.split(" ", 1)
    assert name == "tool-where" and int(ident) != threading.get_ident()
    assert set(answers) == {first}  # the same worker every time: no thread started per call
    worker = next(t for t in threading.enumerate() if t.ident == int(ident))
    assert worker.daemon


async def test_concurrent_calls_each_get_a_thread_of_their_own() -> None:
    gate = threading.Event()
    reg = _registry(gate)
    calls = [asyncio.create_task(reg.execute("hold", {"n": i})) for i in range(4)]
    await asyncio.sleep(0)
    gate.set()  # all four are submitted before any can finish: none may wait for another's worker
    results = await asyncio.gather(*calls)
    assert len({r.content for r in results}) == 4


async def test_an_abandoned_call_takes_its_thread_with_it() -> None:
    gate = threading.Event()
    reg = _registry(gate, timeout_s=0.2)
    result = await reg.execute("hold", {"n": 1})
    assert result.is_error and result.data["timed_out"] is True
    (stuck,) = [t for t in threading.enumerate() if t.name == "tool-hold"]
    gate.set()
    await asyncio.to_thread(stuck.join)  # it exits once the call returns: it never rejoins the pool
    assert not stuck.is_alive()
    assert not (await reg.execute("where", {})).is_error


def test_workers_count_threads_and_retire_when_idle() -> None:
    pool = DaemonWorkers(idle_s=0.05)
    done = threading.Event()
    ran: list[str] = []

    def job() -> tuple[bool, Callable[[], None]]:
        ran.append(threading.current_thread().name)
        return True, done.set

    before = set(threading.enumerate())
    pool.submit("x", job)
    assert done.wait(30)
    assert pool.started == 1 and ran == ["tool-x"]
    (worker,) = [t for t in threading.enumerate() if t not in before]
    assert worker.name == IDLE_NAME
    worker.join(30)  # idle past idle_s: it leaves the pool and ends
    assert not worker.is_alive()
    done.clear()
    pool.submit("y", job)
    assert done.wait(30) and pool.started == 2
