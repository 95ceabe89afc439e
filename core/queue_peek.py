"""The queue's first page read straight from a SQLite workspace with the standard library.

Before the desk has imported SQLAlchemy and opened the store (most of a second), it can already
list what the analyst came for: each status's count and each group's first page of tasks, in
the queue's order. This module does that read with ``sqlite3`` alone, read-only, and returns
the rows as the store would hand them over (naive UTC datetimes, decoded JSON), so the live
queue model is seeded from it (``core.tasks.queue.snapshot_from_peek``) and the store's first
reload replaces the rows in place. It never decides anything: any doubt (PostgreSQL, a missing
file, an older schema, a locked database) means no peek rather than a wrong one.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from core.inputs import loads_toml

# The queue's groups as ``core.domain.queue.QUEUE_GROUPS`` has them (a test keeps them equal);
# repeated here because this module is read before the domain's imports are paid for.
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
# ``core.domain.records.TaskRecord``'s fields, each a column of ``tasks`` (a test keeps them equal).
TASK_COLUMNS: tuple[str, ...] = (
    "id",
    "title",
    "text",
    "status",
    "validation_outcome",
    "team_spec",
    "output_schema",
    "main_session_id",
    "attempt_count",
    "latest_validation_status",
    "latest_score",
    "latest_category",
    "revision_requested_by",
    "read_only",
    "origin",
    "runner",
    "heartbeat_at",
    "version",
    "created_at",
    "updated_at",
)
# ``core.domain.queue.SortColumn``'s values (a test keeps them equal): the only names that reach SQL.
SORT_COLUMNS = frozenset(
    {
        "updated_at",
        "created_at",
        "title",
        "latest_score",
        "latest_category",
        "attempt_count",
        "status",
        "validation_outcome",
    }
)
_DATETIMES = ("heartbeat_at", "created_at", "updated_at")
_SQLITE_PREFIXES = ("sqlite+aiosqlite:///", "sqlite:///")


@dataclass(frozen=True)
class Peek:
    """Stored counts per status, and per group (``PEEK_GROUPS`` order) its statuses' first rows.

    Each status's arm holds at most ``limit + 1`` rows in the queue's order, so whoever merges a
    group's arms knows its first page and whether more follow.
    """

    counts: dict[str, int]
    groups: tuple[tuple[dict[str, Any], ...], ...]
    limit: int


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
                    configured = loads_toml(fh.read().decode("utf-8")).get("db_url")
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


def peek_queue(
    path: Path, *, sort_column: str = "updated_at", descending: bool = True, limit: int = 50
) -> Peek | None:
    """Counts and each group's first ``limit`` tasks in the queue's order; None if unsure.

    The order is the store's (``core.store.queue_sql.order_by``): the column, NULL lowest, then
    id ascending; SQLite compares text by code point there too.
    """
    if sort_column not in SORT_COLUMNS or not path.is_file():
        return None  # never create a workspace: opening it is the store's job
    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return None
    try:
        counts: dict[str, int] = dict.fromkeys((s for _, group in PEEK_GROUPS for s in group), 0)
        for status, n in con.execute("SELECT status, sum(n) FROM task_counts GROUP BY status"):
            counts[str(status)] = int(n or 0)
        order = f"{sort_column} DESC NULLS LAST, id" if descending else f"{sort_column} ASC NULLS FIRST, id"
        arms: list[str] = []
        params: list[object] = []
        for i, (_, statuses) in enumerate(PEEK_GROUPS):
            for status in statuses:
                if not counts.get(status):
                    continue  # the store's reload skips empty statuses too
                arms.append(
                    f"SELECT * FROM (SELECT {i}, {', '.join(TASK_COLUMNS)} FROM tasks "
                    f"WHERE status = ? ORDER BY {order} LIMIT ?)"
                )
                params.extend([status, limit + 1])
        found: list[list[dict[str, Any]]] = [[] for _ in PEEK_GROUPS]
        if arms:
            for row in con.execute(" UNION ALL ".join(arms), params):
                found[int(row[0])].append(_task_values(row[1:]))
    except (sqlite3.Error, ValueError):  # ValueError: a stored value the store would not have written
        return None
    finally:
        con.close()
    return Peek(counts=counts, groups=tuple(tuple(rows) for rows in found), limit=limit)


def _task_values(row: tuple[Any, ...]) -> dict[str, Any]:
    """One ``tasks`` row as SQLAlchemy would return it: datetimes parsed (naive, as stored), JSON
    decoded; 0/1 stay integers, which ``TaskRecord`` reads as booleans as it does the store's."""
    values = dict(zip(TASK_COLUMNS, row, strict=True))
    for name in _DATETIMES:
        if isinstance(values[name], str):
            values[name] = datetime.fromisoformat(values[name])
    if isinstance(values["output_schema"], str):
        values["output_schema"] = json.loads(values["output_schema"])
    return values


__all__ = ["PEEK_GROUPS", "SORT_COLUMNS", "TASK_COLUMNS", "Peek", "peek_queue", "workspace_path"]
