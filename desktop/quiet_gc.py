"""Keep Python's full garbage collections from stalling the desk's loop.

A full (generation 2) collection walks every tracked object. After start-up the desk holds a few
hundred thousand of them that live as long as the process (Qt wrappers, SQLAlchemy, pydantic and
later litellm's tables), so each full collection took 90–220 ms on 100k tasks, always in the
middle of some keystroke or paint (measured with ``gc.callbacks`` under
``benchmarks/bench_desk.py``: the longest loop stall while typing was a collection). Freezing
what start-up built moves it out of the collector's sight; later garbage is collected as usual.
"""

from __future__ import annotations

import gc

__all__ = ["freeze_long_lived"]


def freeze_long_lived() -> int:
    """Put every object alive now in the permanent generation; returns how many are frozen.

    Call it when a phase that builds objects for the process's lifetime ends (the window is up,
    litellm is imported). Garbage alive at that moment is kept too: a few objects, once.
    """
    gc.freeze()
    return gc.get_freeze_count()
