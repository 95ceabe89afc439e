"""How far long work got, told to whoever listens: the command line's bar on a terminal, or nobody.

Export, verify, import, report and the search reindex call ``advance`` as they go (and ``expect``
when they know the whole); the command line listens with a bar only on a terminal
(``core.cli.progress``). The listener travels in a context variable: ``asyncio.to_thread`` and new
tasks copy the context, so work in threads reports too, and the desk and the tests, which listen to
nothing, pay one lookup per step. Each report names its unit (bytes, tasks, steps); a listener keeps
to one unit and ignores the rest, so a report that verifies a bundle on the way does not add bytes
to a count of steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Listener", "advance", "expect", "listening"]


@dataclass(frozen=True)
class Listener:
    unit: str
    advanced: Callable[[int], None]
    expected: Callable[[int], None]


_LISTENER: ContextVar[Listener | None] = ContextVar("evidence_desk_progress", default=None)


def advance(n: int, unit: str = "B") -> None:
    """``n`` more units done."""
    listener = _LISTENER.get()
    if listener is not None and listener.unit == unit and n > 0:
        listener.advanced(n)


def expect(n: int, unit: str = "B") -> None:
    """``n`` more units to do in all (added to what was expected before)."""
    listener = _LISTENER.get()
    if listener is not None and listener.unit == unit and n > 0:
        listener.expected(n)


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
