"""The command line's progress bar for long commands (export, verify, import, report, reindex).

Only on a terminal: with ``--json``, or with stderr piped or redirected, nothing is drawn, so
scripts and logs get the command's output and nothing else. The bar goes to stderr, written raw
(``core.terminal.raw_stream``: tqdm's own carriage returns are the point), and is removed when the
command ends; its description is our own text, never outside input.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from core.progress import Listener, listening

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

    try:
        with listening(Listener(unit=unit, advanced=bar.update, expected=expected)):
            yield
    finally:
        bar.close()
