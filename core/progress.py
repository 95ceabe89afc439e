"""How far long work got, told to whoever listens: the command line's bar on a terminal, or nobody.

Export, verify, import, report and the search reindex call ``advance`` as they go (and ``expect``
when they know the whole); the command line listens with a bar only on a terminal
(``progress_bar``). The listener travels in a context variable: ``asyncio.to_thread`` and new
tasks copy the context, so work in threads reports too, and the desk and the tests, which listen to
nothing, pay one lookup per step. Each report names its unit (bytes, tasks, steps); a listener keeps
to one unit and ignores the rest, so a report that verifies a bundle on the way does not add bytes
to a count of steps.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["Listener", "advance", "expect", "listening", "progress_bar"]


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


# The command line's bar. Only on a terminal: with ``--json`` (``quiet``), or stderr piped or
# redirected, nothing is drawn, so scripts and logs get the command's output and nothing else. The
# bar goes to stderr written raw (``core.terminal.raw_stream``: tqdm's carriage returns are the
# point) and is removed when the work ends; its description is our own text, never outside input.
UNIT_NAMES = {"B": "B", "task": "task", "step": "step"}


@contextmanager
def progress_bar(desc: str, *, unit: str = "B", quiet: bool = False) -> Iterator[None]:
    """A bar for the work done inside the block, when stderr is a terminal and not ``quiet``."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    from tqdm import tqdm

    from core.terminal import raw_stream

    bar: Any = tqdm(
        total=None,
        unit=UNIT_NAMES[unit],
        unit_scale=unit == "B",
        unit_divisor=1024 if unit == "B" else 1000,
        desc=desc,
        file=raw_stream(sys.stderr),
        leave=False,
    )

    def expected(n: int) -> None:
        bar.total = (bar.total or 0) + n
        bar.refresh()

    def advanced(n: int) -> None:
        bar.update(n)
        if bar.total and bar.n >= bar.total:  # tqdm's adaptive ``miniters`` may skip the last step's draw
            bar.refresh()

    try:
        with listening(Listener(unit=unit, advanced=advanced, expected=expected)):
            yield
    finally:
        bar.close()
