"""Progress and cancellation shared by exports and bulk actions, plus the write-then-rename file.

Long work reports ``Step``s to an optional callback and checks a ``Cancellation`` between units
(tasks), never in the middle of one. Output goes to a temporary file beside the target and is
renamed over it only when everything was written: a cancelled or failed export leaves the target
as it was (absent, or the previous complete file).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from core.errors import EvidenceDeskError
from core.leftovers import new_part_file
from core.tasks.bulk import Cancellation


@dataclass(frozen=True)
class Step:
    """``done`` of ``total`` units finished; ``label`` names the one just handled."""

    done: int
    total: int
    label: str = ""


ProgressSink = Callable[[Step], None]


class ExportCancelled(EvidenceDeskError):
    """The analyst cancelled; nothing was written. ``done`` units had been prepared."""

    def __init__(self, what: str, done: int, total: int) -> None:
        self.done, self.total = done, total
        super().__init__(f"{what} cancelled after {done} of {total} task(s); no file was written")


def check(cancel: Cancellation | None, what: str, done: int, total: int) -> None:
    if cancel is not None and cancel.cancelled:
        raise ExportCancelled(what, done, total)


@contextmanager
def replacing(out: Path, *, mode: str = "w", newline: str | None = None) -> Iterator[IO[str]]:
    """Write to a temporary file beside ``out``; rename it over ``out`` only if the block succeeds."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = new_part_file(out)
    except OSError as exc:
        raise EvidenceDeskError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with open(tmp, mode, encoding="utf-8", newline=newline) as fh:
            yield fh
        os.replace(tmp, out)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise EvidenceDeskError(f"cannot write {out}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["Cancellation", "ExportCancelled", "ProgressSink", "Step", "check", "replacing"]
