"""Task-id prefixes are matched literally: a typed ``%`` or ``_`` must never select another task."""

from __future__ import annotations

import pytest

from core.errors import StoreError
from core.store import Store


async def test_like_wildcards_are_not_patterns(db_url: str) -> None:
    store = await Store.open(db_url)
    task = await store.create_task("the only task")
    for typed in ("%%%%%%", f"{task.id[:5]}%", f"{task.id[:5]}_", "______", task.id[:6] + "\\"):
        with pytest.raises(StoreError, match="not a task id prefix"):
            await store.get_task(typed)
    assert (await store.get_task(task.id[:6].upper())).id == task.id
    await store.close()


async def test_short_prefix_says_too_short(db_url: str) -> None:
    store = await Store.open(db_url)
    task = await store.create_task("short")
    with pytest.raises(StoreError, match="too short"):
        await store.get_task(task.id[:3])
    await store.close()


async def test_ambiguous_prefix_is_refused(db_url: str) -> None:
    store = await Store.open(db_url)
    await store.create_task("one", task_id="abcdef01" + "0" * 24)
    await store.create_task("two", task_id="abcdef02" + "0" * 24)
    with pytest.raises(StoreError, match="ambiguous"):
        await store.get_task("abcdef")
    assert (await store.get_task("abcdef02")).text == "two"
    with pytest.raises(StoreError, match="no task"):
        await store.get_task("abcdef03")
    await store.close()
