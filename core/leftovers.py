"""What an interrupted export or import leaves behind, and how the next one knows it is safe to remove.

A process killed outright (SIGKILL, a power cut) runs no cleanup: an export leaves its ``.part``
file beside the target and an import leaves the texts it stored before its rows. Both are named
with the writing process's tag (a hash of the host name and the process id), so the next export
into that directory, or the next import, can tell a leftover of a dead process on this machine from
the work of a live one (another export to the same folder, another import into a shared workspace)
and remove only the former. A tag from another host is never judged: its process cannot be checked.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import tempfile
from pathlib import Path

__all__ = [
    "IMPORT_OWNER_PREFIX",
    "import_finished",
    "import_owner",
    "is_dead_import_owner",
    "new_part_file",
    "sweep_part_files",
]

log = logging.getLogger(__name__)

# Names this process made and still uses: a later process that got the same id (containers
# restart their ids) is then told apart from this one, which never sweeps its own live work.
_MINE: set[str] = set()
_PART = re.compile(r"^\..+\.h(?P<host>[0-9a-f]{8})-p(?P<pid>[0-9]+)\.part$")
_IMPORT = re.compile(r"^imp-(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[0-9a-f]+$")
IMPORT_OWNER_PREFIX = "imp-"


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _alive(pid: int) -> bool:
    """Whether process ``pid`` of this host still runs; where that cannot be asked, assume it does."""
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists and belongs to someone else
        return True
    return True


def _dead(host: str, pid: int, name: str) -> bool:
    if host != _host():
        return False
    if pid == os.getpid():
        return name not in _MINE
    return not _alive(pid)


def new_part_file(out: Path) -> Path:
    """A fresh temporary file beside ``out`` tagged with this process; leftovers there are removed first."""
    sweep_part_files(out.parent)
    fd, name = tempfile.mkstemp(
        prefix=f".{out.name}.", suffix=f".h{_host()}-p{os.getpid()}.part", dir=out.parent
    )
    os.close(fd)
    _MINE.add(Path(name).name)
    return Path(name)


def sweep_part_files(directory: Path) -> int:
    """Remove the ``.part`` files of dead processes of this host in ``directory``; one log line if any."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    gone = 0
    for entry in entries:
        m = _PART.match(entry.name)
        if m is None or not _dead(m["host"], int(m["pid"]), entry.name):
            continue
        try:
            os.unlink(entry.path)
        except FileNotFoundError:
            continue  # another sweeper was first
        except OSError:
            log.warning("cannot remove the unfinished export file %s", entry.path, exc_info=True)
            continue
        gone += 1
    if gone:
        log.warning(
            "removed %d unfinished export file(s) left in %s by an interrupted export", gone, directory
        )
    return gone


def import_owner() -> str:
    """The owner an import's texts are stored under until its rows commit (at most 32 characters)."""
    name = f"{IMPORT_OWNER_PREFIX}{_host()}-{os.getpid()}-{os.urandom(4).hex()}"
    _MINE.add(name)
    return name


def import_finished(owner: str) -> None:
    _MINE.discard(owner)


def is_dead_import_owner(owner: str) -> bool:
    """``owner`` is an import of a process of this host that no longer runs (its texts are orphans)."""
    m = _IMPORT.match(owner)
    return m is not None and _dead(m["host"], int(m["pid"]), owner)
