"""The stdlib peek shows what the live queue will show, or nothing; it never guesses."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.config import load_settings
from core.domain.queue import QUEUE_GROUPS, QueueFilter, QueueSort, SortColumn
from core.domain.records import TaskRecord
from core.domain.status import TaskStatus, ValidationOutcome
from core.queue_peek import PEEK_GROUPS, SORT_COLUMNS, TASK_COLUMNS, peek_queue, workspace_path
from core.store import Store
from core.store.models import TaskRow
from core.tasks.queue import QueueSnapshot, TaskQueue, snapshot_from_peek

REPO = Path(__file__).resolve().parents[2]


def test_peek_groups_are_the_queue_groups() -> None:
    assert tuple((g.key, tuple(s.value for s in g.statuses)) for g in QUEUE_GROUPS) == PEEK_GROUPS


def test_peek_columns_and_sorts_are_the_stores() -> None:
    assert set(TASK_COLUMNS) == set(TaskRecord.model_fields)
    assert set(TASK_COLUMNS) <= set(TaskRow.__table__.c.keys())
    assert frozenset(c.value for c in SortColumn) == SORT_COLUMNS


async def _varied_workspace(url: str) -> list[TaskRecord]:
    """Tasks in every status with NULLs, ties, JSON, read-only rows and naive/aware times."""
    statuses = list(TaskStatus)
    store = await Store.open(url)
    try:
        made = []
        tie = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)
        for i in range(70):
            task = await store.create_task(
                f"question {i}",
                title=f"Task {i % 7} é" if i % 5 else f"task {i}",
                output_schema={"type": "object", "n": i} if i % 4 == 0 else None,
            )
            fields: dict[str, object] = {
                "status": statuses[i % len(statuses)],
                "attempt_count": i % 3,
                "latest_score": None if i % 3 == 0 else (i % 10) / 10,
                "latest_category": None if i % 2 else ("factual", "reasoning", "citation")[i % 3],
                "validation_outcome": None if i % 4 else ValidationOutcome.ACCEPTED,
                "read_only": i % 9 == 0,
                "heartbeat_at": tie if i % 6 == 0 else None,
            }
            if i % 8 == 0:
                fields["updated_at"] = tie  # ties broken by id, as the store orders them
            made.append(await store.update_task(task.id, **fields))
        return made
    finally:
        await store.close()


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("column", list(SortColumn))
def test_the_seed_is_the_snapshot_the_store_would_give(
    sqlite_url: str, column: SortColumn, descending: bool
) -> None:
    """Same rows, values, order, counts and cursors: the store's reload replaces nothing visible."""
    asyncio.run(_varied_workspace(sqlite_url))
    sort = QueueSort(column=column, descending=descending)

    async def stored() -> QueueSnapshot:
        store = await Store.open(sqlite_url)
        try:
            return await TaskQueue(store).snapshot(QueueFilter(), sort, page_size=3)
        finally:
            await store.close()

    expected = asyncio.run(stored())
    path = workspace_path(sqlite_url)
    assert path is not None
    peeked = peek_queue(path, sort_column=column.value, descending=descending, limit=3)
    assert peeked is not None
    seeded = snapshot_from_peek(peeked, sort)
    assert seeded.counts == expected.counts
    assert seeded.pages == expected.pages
    assert sum(len(p.rows) for p in seeded.pages.values()) == 3 * len(QUEUE_GROUPS)


def test_an_unknown_sort_column_never_reaches_sql(sqlite_url: str) -> None:
    asyncio.run(_varied_workspace(sqlite_url))
    path = workspace_path(sqlite_url)
    assert path is not None
    assert peek_queue(path, sort_column="id; DROP TABLE tasks") is None
    assert peek_queue(path) is not None


def test_peek_never_creates_or_misreads_a_workspace(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.sqlite3"
    assert peek_queue(missing) is None
    assert not missing.exists()
    other = tmp_path / "other.sqlite3"
    sqlite3.connect(other).execute("CREATE TABLE unrelated (x)").connection.close()
    assert peek_queue(other) is None  # not a workspace (or an older schema): no peek
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not a database at all" * 100)
    assert peek_queue(garbage) is None


@pytest.mark.parametrize(
    "source", ["explicit", "environment", "config file", "default", "postgres", "memory"]
)
def test_peek_reads_the_workspace_settings_would_open(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVIDENCE_DESK_DB_URL", raising=False)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(config))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = f"sqlite+aiosqlite:///{tmp_path / 'chosen.sqlite3'}"
    explicit = None
    if source == "explicit":
        explicit = url
    elif source == "environment":
        monkeypatch.setenv("EVIDENCE_DESK_DB_URL", url)
    elif source == "config file":
        config.write_text(f'db_url = "{url}"\n', encoding="utf-8")
    elif source == "postgres":
        explicit = "postgresql+psycopg://desk@127.0.0.1/ws"
    elif source == "memory":
        explicit = "sqlite+aiosqlite:///:memory:"
    settled = load_settings(db_url=explicit).db_url
    found = workspace_path(explicit)
    if source in ("postgres", "memory"):
        assert found is None
    else:
        assert f"sqlite+aiosqlite:///{found}" == settled


def test_the_boot_queue_path_imports_no_store_or_sqlalchemy() -> None:
    """What the first paint needs must stay cheap: the store's imports come after it."""
    code = (
        "import sys, desktop.app, core.queue_peek, core.tasks.queue, desktop.views.queue.view; "
        "bad = [m for m in ('sqlalchemy', 'core.store', 'core.domain.evidence', 'pydantic_settings', "
        "'core.config', 'litellm') if m in sys.modules]; "
        "assert not bad, bad; assert 'pydantic' in sys.modules  # the check itself works"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
