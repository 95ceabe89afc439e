"""Eight workers starting at once on an empty database set up both schemas without a crash.

Each "worker" here is what a worker process does before it takes jobs (open the workspace; apply
procrastinate's schema), on its own connections, all at once; ten rounds on ten databases that have
none of procrastinate's tables. In-process rather than eight interpreters per round: the race is
between database sessions, and eighty process starts would cost minutes for the same sessions. Our
own schema's simultaneous migration is tested by tests/core/test_postgres_concurrent_open.py, so
the rounds start from the migrated template and pay only for the part that used to crash.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.pg import PgServer, worker_id

STARTS = 8
ROUNDS = 10
_names = itertools.count(1)


async def _start(url: str, gate: asyncio.Barrier) -> None:
    from core.store import Store
    from core.tasks import dispatch

    await gate.wait()  # every start leaves the gate together
    store = await Store.open(url)
    try:
        await dispatch.ensure_queue_schema(store)
        assert await dispatch.has_queue_schema(store)
    finally:
        await store.close()


async def _round(url: str) -> list[BaseException | None]:
    gate = asyncio.Barrier(STARTS)
    return await asyncio.gather(*(_start(url, gate) for _ in range(STARTS)), return_exceptions=True)


@pytest.mark.asyncio
async def test_eight_simultaneous_starts_on_an_empty_database_ten_times(
    pg_server: PgServer, pg_workspace_template: str
) -> None:
    failures: list[str] = []
    for _ in range(ROUNDS):
        name = f"t{worker_id()}starts_{next(_names)}"
        url = await asyncio.to_thread(pg_server.create_database, name, pg_workspace_template)
        try:
            results = await _round(url)
        finally:
            await asyncio.to_thread(pg_server.drop_database, name)
        failures += [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
    assert failures == []
