"""The Calibration window's figures, computed in a worker thread with its own store.

At 100,000 decided tasks ``calibrate`` folds tens of thousands of rows and sorts every cell's task
ids: on the desk's GUI loop, even cut into turns, that held painting for 150 ms to a second on a
loaded machine. Here it runs on a thread of its own, with its own event loop and its own engine
on the workspace (an ``AsyncEngine`` belongs to the loop that made it, so the desk's cannot be
shared); the GUI loop only awaits the finished figures. One computation at a time: a refresh asked
for meanwhile waits its turn rather than competing for the cores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from core.calibration import Calibration, CalibrationFilter, calibrate_apart


class CalibrationWorker:
    """Runs ``calibrate_apart`` off the GUI thread; ``computing`` is the latest run's future."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="calibration")
        self.computing: Future[Calibration] | None = None

    def calibrate(self, flt: CalibrationFilter) -> Coroutine[Any, Any, Calibration]:
        """Start computing the figures for ``flt`` now; the coroutine returned awaits them, leaving
        the loop free to paint meanwhile."""
        self.computing = self._pool.submit(calibrate_apart, self.url, flt, cases=True)
        return _awaited(self.computing)


async def _awaited(computing: Future[Calibration]) -> Calibration:
    return await asyncio.wrap_future(computing)


__all__ = ["CalibrationWorker"]
