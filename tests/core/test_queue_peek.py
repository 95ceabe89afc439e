"""The stdlib peek shows what the live queue will show, or nothing; it never guesses."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import load_settings
from core.domain.queue import QUEUE_GROUPS, QueueFilter, QueueSort
from core.domain.status import TaskStatus
from core.queue_peek import PEEK_GROUPS, peek_queue, workspace_path
from core.store import Store, queue_sql

REPO = Path(__file__).resolve().parents[2]


def test_peek_groups_are_the_queue_groups() -> None:
    assert tuple((g.key, tuple(s.value for s in g.statuses)) for g in QUEUE_GROUPS) == PEEK_GROUPS


def test_peek_shows_the_live_queue_first_pages_and_counts(sqlite_url: str) -> None:
    statuses = list(TaskStatus)

    async def build() -> tuple[dict[str, list[str]], dict[TaskStatus, int]]:
        store = await Store.open(sqlite_url)
        try:
            for i in range(60):
                task = await store.create_task(f"question {i}", title=f"Task {i}")
                await store.update_task(task.id, status=statuses[i % len(statuses)])
            groups = [(g.key, g.statuses) for g in QUEUE_GROUPS]
            pages = await queue_sql.first_pages(store, groups, flt=QueueFilter(), sort=QueueSort(), limit=3)
            counts = await queue_sql.stored_counts(store, QueueFilter())
            return {k: [r.id for r in p.rows] for k, p in pages.items()}, counts
        finally:
            await store.close()

    pages, counts = asyncio.run(build())
    path = workspace_path(sqlite_url)
    assert path is not None
    peeked = peek_queue(path, limit=3)
    assert peeked is not None
    assert {g.key: [r.task_id for r in g.rows] for g in peeked} == pages
    by_key = {g.key: g.count for g in peeked}
    for group in QUEUE_GROUPS:
        assert by_key[group.key] == sum(counts[s] for s in group.statuses)


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


def test_the_peek_path_imports_no_store_sqlalchemy_or_pydantic() -> None:
    """What the first paint needs must stay cheap: the store's imports come after it."""
    code = (
        "import sys, desktop.app, core.queue_peek, desktop.views.queue_peek; "
        "bad = [m for m in ('sqlalchemy', 'pydantic', 'core.store', 'core.domain', 'litellm') if m in sys.modules]; "
        "assert not bad, bad"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
