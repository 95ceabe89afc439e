"""Claims through the command line, on both engines: claim, release, next and a reviewer's list."""

from __future__ import annotations

import asyncio

from core.domain.status import TaskStatus
from core.store import Store
from tests.integration.conftest import Desk


async def _review_tasks(url: str, *titles: str) -> list[str]:
    store = await Store.open(url)
    try:
        ids = []
        for title in titles:
            task = await store.create_task(f"{title}: is the answer grounded?", title=title)
            await store.update_task(task.id, status=TaskStatus.NEEDS_REVIEW)
            ids.append(task.id)
        return ids
    finally:
        await store.close()


async def _event_kinds(url: str, task_id: str) -> list[str]:
    store = await Store.open(url)
    try:
        return [e.kind for e in await store.get_task_events(task_id)]
    finally:
        await store.close()


def test_next_claims_in_turn_and_a_held_task_is_refused(desk: Desk, db_url: str) -> None:
    desk.script([{"model": "agent", "turns": [{"content": "unused"}]}])
    first, second = asyncio.run(_review_tasks(db_url, "Tides", "Everest"))
    db = ("--db", db_url)
    got = desk.cli_json("next", "--reviewer", "ana", *db)
    assert (got["id"], got["claim"]["reviewer"]) == (first, "ana")
    got = desk.cli_json("next", "--reviewer", "bob", *db)
    assert (got["id"], got["claim"]["reviewer"]) == (second, "bob")
    code, out, _ = desk.cli("next", "--reviewer", "carl", "--json", *db)
    assert code == 0 and out.strip() == "null"

    code, _, err = desk.cli("claim", first[:8], "--reviewer", "bob", *db)
    assert code == 3 and "claimed by ana until" in err and err.count("\n") == 1
    assert "pass --take-over to take it over" in err  # the refusal names the way through
    taken = desk.cli_json("claim", first[:8], "--reviewer", "bob", "--take-over", *db)
    assert taken["reviewer"] == "bob"

    mine = desk.cli_json("list", "--reviewer", "bob", *db)
    assert [t["id"] for t in mine] == [second, first]  # in the order bob took them
    assert desk.cli_json("list", "--reviewer", "ana", *db) == []
    desk.env(reviewer="bob")
    code, out, _ = desk.cli("list", "--assigned-to-me", *db)
    assert code == 0 and "Tides" in out and "claimed by bob" in out
    assert len(desk.cli_json("list", *db)) == 2  # the plain list is unchanged

    code, _, err = desk.cli("release", first, "--reviewer", "ana", *db)
    assert code == 3 and "holds no claim" in err
    assert desk.cli_json("release", first, *db) == {"task_id": first, "released_by": "bob"}
    assert asyncio.run(_event_kinds(db_url, first)) == ["claim_taken_over", "claim_released"]
    got = desk.cli_json("next", "--reviewer", "carl", *db)
    assert got["id"] == first
