"""Issue 30, point 4: what an analyst writes with a decision (a note, a revision prompt, a reopen
reason) is searchable as soon as it is written, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

from core.config import load_settings
from core.domain import FeedbackAction, TaskStatus
from core.search.index import DocKind
from core.search.query import SearchQuery, SearchService
from core.store import TaskRecord
from core.tasks.review import ReviewService
from core.tasks.service import TaskService
from core.workspace import Workspace


async def _reviewable(ws: Workspace, text: str) -> TaskRecord:
    """A task with one finished attempt, waiting for the analyst."""
    task = await TaskService(ws).create(text)
    attempt = await ws.store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
    await ws.store.update_attempt(attempt.id, final_output="An answer.", state="finished")
    return await ws.store.update_task(task.id, status=TaskStatus.NEEDS_REVIEW, attempt_count=1)


async def test_notes_revision_prompts_and_reopen_reasons_are_found(db_url: str, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"conversations": [{"model": "agent", "turns": [{"content": "x"}]}]}), "utf-8"
    )
    ws = await Workspace.open(load_settings(db_url=db_url, script=script))
    try:
        tasks = TaskService(ws)
        review = ReviewService(tasks)
        noted = await _reviewable(ws, "Are zebrafish used in regeneration studies?")
        noted = await review.feedback(
            noted.id, FeedbackAction.SATISFIED, expected_version=noted.version, note="zebrafish verified"
        )
        await review.reopen(noted.id, reason="axolotl figures disputed", expected_version=noted.version)
        revised = await _reviewable(ws, "How fast do planaria regrow?")
        await review.feedback(
            revised.id,
            FeedbackAction.REVISE,
            expected_version=revised.version,
            prompt="cite the flatworm atlas",
        )
        search = SearchService(ws.store)
        for text, task_id in (
            ("zebrafish verified", noted.id),
            ("axolotl", noted.id),
            ("flatworm atlas", revised.id),
        ):
            hits = (await search.search(SearchQuery(text=f'"{text}"'))).hits
            assert [(h.task_id, h.kind) for h in hits] == [(task_id, DocKind.NOTE)], text
    finally:
        await ws.close()
