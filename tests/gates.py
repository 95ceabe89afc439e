"""Ordering by events, not by clocks: a gateway whose calls wait at gates the test opens.

A scripted ``delay_s`` says "this call is slow", but how slow it is next to another call depends on
how busy the machine is. Tests that care about order or overlap hold calls here instead and open
the gates in the order they want: the result is the same on an idle laptop and a loaded CI box.

Every wait in this module has a generous upper bound (``HANG_S``) that only turns a hang into a
failure; no assertion depends on how long anything took.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from core.config import Settings
from core.llm import LLMGateway, LLMResponse
from core.llm.scripted import request_text

HANG_S = 60.0
"""Upper bound for any wait on a gate or an arrival; reaching it means the test is stuck."""


async def wait_until(predicate: Callable[[], bool], timeout: float = HANG_S, what: str = "condition") -> None:  # noqa: ASYNC109
    """Await a condition without blocking the loop (the async counterpart of qtbot.waitUntil).

    For state nothing announces (another component's counters, a widget); ``timeout`` only turns
    a hang into a failure, nothing here asserts how fast anything is.
    """
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.005)


class GatedGateway(LLMGateway):
    """The real gateway over the scripted provider, except that a call whose request text matches a
    held pattern waits until the test calls ``release(pattern)``. Released gates stay open."""

    def __init__(self, settings: Settings, *hold: str, retry_backoff_s: float = 0.001) -> None:
        super().__init__(settings, retry_backoff_s=retry_backoff_s)
        self._gates = {pattern: asyncio.Event() for pattern in hold}
        self._changed = asyncio.Condition()
        self.arrived: Counter[str] = Counter()
        """How many calls reached each pattern's gate (held or already let through)."""
        self.holding: Counter[str] = Counter()
        """How many calls are waiting at each pattern's gate right now."""

    def _gate_for(self, messages: list[dict[str, Any]]) -> str | None:
        text = request_text(messages)
        return next((p for p in self._gates if re.search(p, text)), None)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def complete(self, **kwargs: Any) -> LLMResponse:
        pattern = self._gate_for(kwargs["messages"])
        if pattern is not None:
            self.arrived[pattern] += 1
            self.holding[pattern] += 1
            await self._notify()
            try:
                await asyncio.wait_for(self._gates[pattern].wait(), HANG_S)
            finally:
                self.holding[pattern] -= 1
        return await super().complete(**kwargs)

    def release(self, pattern: str) -> None:
        """Let every held and every later call matching ``pattern`` through."""
        self._gates[pattern].set()

    async def wait_arrived(self, pattern: str, count: int = 1) -> None:
        """Return once ``count`` calls have reached ``pattern``'s gate."""
        await self.wait_for(lambda: self.arrived[pattern] >= count)

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Return once ``predicate()`` holds; it is re-checked whenever a call reaches a gate."""

        async def waiting() -> None:
            async with self._changed:
                await self._changed.wait_for(predicate)

        await asyncio.wait_for(waiting(), HANG_S)
