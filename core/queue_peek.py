"""The queue's first rows read straight from a SQLite workspace with the standard library.

Before the desk has imported SQLAlchemy, the store and the agent (about a second), it can
already show what the analyst came for: each group's count and its newest tasks. This module
does that read with ``sqlite3`` alone, read-only, so importing it costs nothing the first paint
does not already pay. It never decides anything: the live queue (``core.tasks.queue``) replaces
it as soon as the workspace is open, and any doubt (PostgreSQL, a missing file, an older
schema, a locked database) means no peek rather than a wrong one.
"""

from __future__ import annotations

import os
import sqlite3
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

# The queue's groups as ``core.domain.queue.QUEUE_GROUPS`` has them (a test keeps them equal);
# repeated here because importing the domain package costs more than the whole peek.
PEEK_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("needs_review", ("needs_review",)),
    ("awaiting_feedback", ("awaiting_feedback",)),
    ("needs_revision", ("needs_revision",)),
    ("active", ("running", "validating")),
    ("open", ("open",)),
    ("failed", ("failed",)),
    ("closed", ("closed",)),
    ("abandoned", ("abandoned",)),
)
_SQLITE_PREFIXES = ("sqlite+aiosqlite:///", "sqlite:///")


@dataclass(frozen=True)
class PeekRow:
    task_id: str
    title: str
    status: str
    updated_at: str


@dataclass(frozen=True)
class PeekGroup:
    key: str
    count: int
    rows: tuple[PeekRow, ...]


def workspace_path(db_url: str | None) -> Path | None:
    """The SQLite file the desk will open, as ``core.config`` resolves it; None if unsure.

    Explicit URL, then ``EVIDENCE_DESK_DB_URL``, then the config file's ``db_url``, then the
    default workspace, the order settings use. A file that cannot be read means no peek.
    """
    url = db_url or os.environ.get("EVIDENCE_DESK_DB_URL")
    if url is None:
        try:
            import platformdirs

            config = os.environ.get("EVIDENCE_DESK_CONFIG_FILE") or str(
                Path(platformdirs.user_config_dir("evidence-desk")) / "config.toml"
            )
            try:
                with open(config, "rb") as fh:
                    configured = tomllib.load(fh).get("db_url")
            except FileNotFoundError:
                configured = None
            except NotADirectoryError:
                configured = None
            url = (
                str(configured)
                if configured
                else f"sqlite+aiosqlite:///{Path(platformdirs.user_data_dir('evidence-desk')) / 'workspace.sqlite3'}"
            )
        except (OSError, ValueError):
            return None
    for prefix in _SQLITE_PREFIXES:
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            if not rest or rest == ":memory:" or "?" in rest:
                return None
            return Path(rest)
    return None


def peek_queue(path: Path, limit: int = 50) -> tuple[PeekGroup, ...] | None:
    """Each group's stored count and newest ``limit`` tasks (updated last first); None if unsure."""
    if not path.is_file():
        return None  # never create a workspace: opening it is the store's job
    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return None
    try:
        counts: dict[str, int] = dict.fromkeys((s for _, group in PEEK_GROUPS for s in group), 0)
        for status, n in con.execute("SELECT status, sum(n) FROM task_counts GROUP BY status"):
            counts[str(status)] = int(n or 0)
        arms = []
        params: list[object] = []
        for i, (_, statuses) in enumerate(PEEK_GROUPS):
            marks = ", ".join("?" * len(statuses))
            arms.append(
                f"SELECT * FROM (SELECT {i}, id, title, status, updated_at FROM tasks "
                f"WHERE status IN ({marks}) ORDER BY updated_at DESC, id LIMIT ?)"
            )
            params.extend([*statuses, limit])
        found: list[list[PeekRow]] = [[] for _ in PEEK_GROUPS]
        for i, task_id, title, status, updated in con.execute(" UNION ALL ".join(arms), params):
            found[int(i)].append(PeekRow(str(task_id), str(title), str(status), str(updated)))
    except sqlite3.Error:
        return None
    finally:
        con.close()
    groups = []
    for (key, statuses), rows in zip(PEEK_GROUPS, found, strict=True):
        rows.sort(key=lambda r: r.task_id)
        rows.sort(key=lambda r: r.updated_at, reverse=True)  # a union promises no order
        groups.append(PeekGroup(key, sum(counts[s] for s in statuses), tuple(rows)))
    return tuple(groups)


__all__ = ["PEEK_GROUPS", "PeekGroup", "PeekRow", "peek_queue", "workspace_path"]
