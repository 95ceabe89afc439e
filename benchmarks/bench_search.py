"""Search everywhere over a large workspace: a phrase that occurs only inside one tool result.

Each task has a title, task text, one attempt with an answer and two tool results (~300 words of
common vocabulary each), and a verdict with an issue; they go in through ``Store.import_records``
(core/store/bulk.py), so the search index is written by its real path (``core.search.index``).
One tool result of one task, in the middle, carries the phrase. Then, three times each:

- time to hits: ``SearchService.search`` (the desk's and the CLI's path: match, rank, join the
  task, filter, the passage with the match marked), and the same with a filter (status);
- the raw FTS floor: the bare index lookup (FTS5 ``MATCH`` on SQLite, ``tsv @@`` on PostgreSQL).

Run: ``.venv/bin/python benchmarks/bench_search.py --tasks 100000 [--db URL]`` (a ``--db`` that an
earlier run filled is measured again without a new import).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text as sql_text

from benchmarks._common import scratch_dir
from core.domain.evidence import RunEvidence, TaskEvidencePacket, ToolEvidence
from core.domain.records import AttemptRecord, SessionRecord, TaskRecord, ValidationRecord
from core.search.query import RANK_LIMIT, SearchFilters, SearchQuery, SearchService
from core.store import Store, TaskImport

PHRASE = "quartermaster of the drowned lighthouse"
WORDS = [
    "tide",
    "harbour",
    "survey",
    "river",
    "bank",
    "ledger",
    "record",
    "figure",
    "source",
    "station",
    "north",
    "south",
    "east",
    "west",
    "report",
    "annual",
    "water",
    "level",
    "gauge",
    "reading",
    "council",
    "minutes",
    "page",
    "table",
    "column",
    "value",
    "estimate",
    "measured",
    "observed",
    "season",
    "winter",
    "summer",
    "spring",
    "autumn",
    "coast",
    "bridge",
    "road",
    "map",
    "chart",
    "archive",
    "letter",
]


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def one_task(i: int, now: datetime, rng: random.Random, needle_at: int) -> TaskImport:
    tid, aid, sid = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
    at = now - timedelta(minutes=i)
    results = [prose(rng, 300), prose(rng, 300)]
    if i == needle_at:
        results[1] = f"{prose(rng, 150)} {PHRASE} {prose(rng, 150)}"
    answer = prose(rng, 40)
    run = RunEvidence(
        run_id=uuid.uuid4().hex,
        session_id=sid,
        output_text=answer,
        tool_results=[ToolEvidence(tool_name="search", content=c) for c in results],
    )
    packet = TaskEvidencePacket(task_id=tid, attempt_index=1, main_run=run, final_output=answer)
    task = TaskRecord(
        id=tid, title=f"Task {i}: {prose(rng, 5)}", text=prose(rng, 25), status="needs_review",
        validation_outcome=None, team_spec=None, output_schema=None, main_session_id=sid, attempt_count=1,
        latest_validation_status="rejected", latest_score=0.4, latest_category="incomplete",
        revision_requested_by=None, read_only=False, origin=None, runner=None, heartbeat_at=None, version=2,
        created_at=at, updated_at=at,
    )  # fmt: skip
    attempt = AttemptRecord(
        id=aid, task_id=tid, index=1, trigger="initial", prompt="p", state="finished", finish_reason="stop",
        final_output=answer, validation_status="rejected", validation_score=0.4, validation_outcome=None,
        packet=packet.model_dump(mode="json"), started_at=at, finished_at=at,
    )  # fmt: skip
    session = SessionRecord(id=sid, task_id=tid, parent_session_id=None, kind="main", label="", created_at=at)
    verdict = ValidationRecord(
        id=uuid.uuid4().hex, task_id=tid, attempt_id=aid, attempt_index=1, status="rejected", score=0.4,
        category="incomplete", result={"status": "rejected", "issues": [prose(rng, 12)]}, raw_response="{}",
        prompt=None, debug={}, created_at=at,
    )  # fmt: skip
    return TaskImport(task=task, attempts=[attempt], sessions=[session], validations=[verdict])


async def timed(what: str, call: Callable[[], Awaitable[Any]]) -> Any:
    times, result = [], None
    for _ in range(3):
        t0 = time.perf_counter()
        result = await call()
        times.append((time.perf_counter() - t0) * 1000)
    print(f"  {what} (ms): min {min(times):.1f} median {statistics.median(times):.1f} max {max(times):.1f}")
    return result


async def run(url: str, n: int) -> None:
    store = await Store.open(url)
    try:
        rng = random.Random(19)
        now = datetime.now(UTC)
        async with store.read_session() as s:
            have = (await s.execute(sql_text("SELECT count(*) FROM tasks"))).scalar() or 0
        if have:  # --db names a workspace an earlier run filled: measure it again as it is
            print(f"reusing the {have:,} tasks already in the workspace")
        else:
            started = time.perf_counter()
            for start in range(0, n, 2_000):
                batch = [one_task(i, now, rng, n // 2) for i in range(start, min(n, start + 2_000))]
                await store.import_records(batch)
            took = time.perf_counter() - started
            print(f"imported and indexed {n:,} tasks in {took:.1f} s ({n / took:,.0f} tasks/s)")
        async with store.read_session() as s:
            docs = (await s.execute(sql_text("SELECT count(*) FROM search_docs"))).scalar()
        print(f"{docs:,} passages indexed")
        search = SearchService(store)
        query = SearchQuery(text=f'"{PHRASE}"', limit=50)
        page = await timed("time to hits, SearchService.search", lambda: search.search(query))
        assert page.hits and {h.kind for h in page.hits} == {"evidence"}, page.hits
        print(f"    hit: {page.hits[0].title} [{page.hits[0].ref}] {page.hits[0].marked()[:90]}…")
        filtered = query.model_copy(update={"filters": SearchFilters(status="needs_review", min_score=0.1)})
        await timed("time to hits with status+score filters", lambda: search.search(filtered))
        common = SearchQuery(text="harbour survey", limit=50)
        first = await timed(
            "a two-word query matching every passage, first page", lambda: search.search(common)
        )
        print(f"    ranked: {first.ranked} (beyond {RANK_LIMIT:,} matches hits come newest first)")
        assert first.more is not None
        later = common.model_copy(update={"after": first.more})
        await timed("  ... its next page", lambda: search.search(later))
        if store.is_sqlite:
            floor = "SELECT rowid FROM search_fts WHERE search_fts MATCH :q"
            param = '"' + PHRASE + '"'
        else:
            floor = "SELECT id FROM search_docs WHERE tsv @@ phraseto_tsquery('simple', :q)"
            param = PHRASE

        async def raw() -> list[Any]:
            async with store.read_session() as s:
                return list((await s.execute(sql_text(floor), {"q": param})).all())

        assert len(await timed("raw FTS floor (index lookup only)", raw)) == len(page.hits)
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--db", help="workspace URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    url = args.db or f"sqlite+aiosqlite:///{scratch_dir() / 'ws.sqlite3'}"
    asyncio.run(run(url, args.tasks))


if __name__ == "__main__":
    main()
