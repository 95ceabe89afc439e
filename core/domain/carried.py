"""Files that travel with a job: a team template or a checklist kept as content in the workspace.

A task queued on one machine runs on whichever worker takes it, and a path names a file only on
the machine that queued it. So the file's text is stored content-addressed, as evidence is
(``core.store.chunks``), and the task's ``team_spec`` or the schedule's ``checklist`` holds a
reference to it: ``stored:<sha256>:<file name>``. The name keeps the suffix (``.toml`` or
``.json`` chooses the team template's parser) and is what the analyst sees. A value without the
prefix is a path written by an older version, read from the disk as a fallback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

PREFIX = "stored:"
_SPEC = re.compile(r"stored:([0-9a-f]{64}):(.+)", re.DOTALL)


@dataclass(frozen=True)
class CarriedFile:
    """A file's stored content (its sha256) and the name it had where it was queued."""

    sha256: str
    name: str

    def spec(self) -> str:
        return f"{PREFIX}{self.sha256}:{self.name}"


def parse_carried(spec: str) -> CarriedFile | None:
    """The stored file a spec names; None for an older row's plain path (or ``auto``)."""
    found = _SPEC.fullmatch(spec)
    return CarriedFile(sha256=found.group(1), name=found.group(2)) if found else None


def shown_name(spec: str | None) -> str | None:
    """What a person is shown for a spec: the file's name, ``auto``, or an older row's path."""
    if spec is None:
        return None
    carried = parse_carried(spec)
    return carried.name if carried is not None else spec


def carried_name(path: str) -> str:
    """The name a file is stored under: its base name (never the queuing machine's directories)."""
    return PurePath(path).name or path
