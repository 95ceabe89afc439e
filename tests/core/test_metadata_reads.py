"""Readers that need only a task's metadata never read its evidence (#18 point 3): the decisions
export, an analyst's verdict and the run outcome touch no stored chunk of a big task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event

from core.cli.run import run_outcome
from core.domain.status import TaskStatus
from core.exports.decisions import write_decisions
from core.store import Store
from core.tasks.override import record_override
from tests.core.test_report_streams import chunked_task


class ContentReads:
    """Statements that read the chunk store (its objects, parts or chunks) on the read engine."""

    def __init__(self, store: Store) -> None:
        self.engine = store.engine.sync_engine
        self.count = 0

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM content_" in statement:
            self.count += 1

    def __enter__(self) -> ContentReads:
        event.listen(self.engine, "before_cursor_execute", self)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self)


async def test_decisions_verdicts_and_outcome_leave_evidence_unread(db_url: str, tmp_path: Path) -> None:
    store = await Store.open(db_url)
    try:
        task_id = await chunked_task(store)
        attempt = (await store.list_attempts(task_id, resolve=False))[0]
        await store.add_feedback(
            task_id=task_id,
            attempt_id=attempt.id,
            action="satisfied",
            prompt=None,
            note="fine",
            reviewer="ana",
            from_status=TaskStatus.NEEDS_REVIEW,
            to_status=TaskStatus.CLOSED,
        )
        with ContentReads(store) as reads:
            await record_override(store, task_id, status="accepted", note="ok", reviewer="ana")
            summary = await write_decisions(store, tmp_path / "d.csv", "csv")
            outcome = await run_outcome(store, await store.get_task(task_id))
        assert summary.rows == 1 and outcome["error"] is None
        assert reads.count == 0
    finally:
        await store.close()
