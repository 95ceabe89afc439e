"""``bench_desk.py --extras``: the GUI thread's stall when a task whose two attempts answer 20,000
words each is selected, with the Diff tab hidden and shown.

The baseline, measured in the same run, is the diff itself (``diff_attempts`` and its page): what
every such selection cost the GUI thread before the Diff tab became lazy (issue #30: 4.24 s).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from core.domain.records import AttemptRecord, TaskRecord
from core.tasks.diff import diff_attempts
from core.tasks.dossier import TaskDossier

ANSWER_WORDS = 20_000
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


def long_dossier(words: int = ANSWER_WORDS) -> TaskDossier:
    """Two finished attempts of ``words`` words, one word in 50 changed by the revision."""
    first = [f"w{i}" for i in range(words)]
    answers = {1: " ".join(first), 2: " ".join(w if i % 50 else f"{w}x" for i, w in enumerate(first))}
    task = TaskRecord.model_validate(
        {
            "id": "long", "title": "Long answer", "text": "Write at length.", "status": "needs_review",
            "validation_outcome": "unvalidated", "team_spec": None, "output_schema": None, "main_session_id": "s",
            "attempt_count": 2, "latest_validation_status": "rejected", "latest_score": 0.4,
            "latest_category": "none", "revision_requested_by": None, "read_only": False, "origin": None,
            "runner": None, "heartbeat_at": None, "version": 3, "created_at": NOW, "updated_at": NOW,
        }
    )  # fmt: skip
    attempts = [_attempt(i, answers[i]) for i in (1, 2)]
    return TaskDossier(task=task, attempts=attempts, validations=[], feedback=[], sessions=[], events=[])


def _attempt(i: int, answer: str) -> AttemptRecord:
    return AttemptRecord.model_validate(
        {
            "id": f"a{i}", "task_id": "long", "index": i, "trigger": "initial" if i == 1 else "revision",
            "prompt": "Longer" if i == 1 else "Fix it", "state": "finished", "finish_reason": "stop",
            "final_output": answer, "validation_status": "rejected", "validation_score": None,
            "validation_outcome": None, "packet": _packet(i, answer), "started_at": NOW, "finished_at": NOW,
        }
    )  # fmt: skip


def _packet(index: int, answer: str) -> dict[str, Any]:
    main = {"run_id": f"r{index}", "session_id": "s", "output_text": answer, "tool_results": []}
    return {"task_id": "long", "attempt_index": index, "main_run": main, "final_output": answer}


async def diff_selection_stall() -> dict[str, float]:
    """Seconds: the old per-selection cost, the selection with the tab hidden, showing the tab, the
    worker's diff painted, and re-showing it from the cache (the page's layout, on the GUI thread)."""
    from desktop.views.task.detail import TaskDetailView
    from desktop.views.task.diff import diff_html

    dossier = long_dossier()
    started = time.perf_counter()
    diff_html(diff_attempts(dossier, 1, 2))
    baseline = time.perf_counter() - started
    view = TaskDetailView()
    view.resize(1400, 860)
    view.show()
    started = time.perf_counter()
    view.set_dossier(dossier)  # the Answer tab is current: the Diff tab is hidden
    hidden = time.perf_counter() - started
    painted: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def done() -> None:
        if not painted.done():
            painted.set_result(None)

    view.diff_view.sig_diff_shown.connect(done)
    started = time.perf_counter()
    view.tabs.setCurrentWidget(view.diff_view)  # shown: the diff goes to a worker
    shown = time.perf_counter() - started
    await painted
    worker = time.perf_counter() - started
    view.tabs.setCurrentIndex(0)
    view.set_dossier(dossier)  # the same task selected again, tab hidden
    started = time.perf_counter()
    view.tabs.setCurrentWidget(view.diff_view)  # re-shown: painted from the cache on the GUI thread
    cached = time.perf_counter() - started
    view.close()
    view.deleteLater()
    return {"baseline": baseline, "hidden": hidden, "shown": shown, "painted": worker, "cached": cached}
