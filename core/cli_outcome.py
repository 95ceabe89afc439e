"""What ``run`` reports about a finished task: why it failed, the tokens it used, its cost.

Read back from the event log rather than from the objects the run held, so the figures are the
ones an audit of the stored task would find, and ``show`` and ``run`` can never disagree.
"""

from __future__ import annotations

from typing import Any

from core.domain import TaskStatus
from core.domain.facts import EventKind
from core.domain.records import TaskRecord

__all__ = ["EXIT_TASK_FAILED", "run_outcome"]

EXIT_TASK_FAILED = 5  # the task ran and ended ``failed``; the reason is on stderr


async def run_outcome(store: Any, task: TaskRecord) -> dict[str, Any]:
    """``error`` (why a failed task failed, else None), token totals and ``cost_usd``.

    The cost stays None until calls record a price; tokens count every answered call: the agent's
    turns and the validator's requests, failed calls excluded (they report no usage).
    """
    events = await store.get_task_events(
        task.id,
        resolve=False,  # usage and errors only: never a tool result's text
        kinds=[
            EventKind.RUN_FINISHED,
            EventKind.LLM_RESPONSE_RECEIVED,
            EventKind.TASK_VALIDATION_SNAPSHOTTED,
            EventKind.TASK_STATUS_CHANGED,
        ],
    )
    prompt = completion = 0
    run_error: str | None = None
    reason: str | None = None
    for event in events:
        payload = event.payload or {}
        if event.kind in (EventKind.LLM_RESPONSE_RECEIVED, EventKind.TASK_VALIDATION_SNAPSHOTTED):
            usage = payload.get("usage") or {}
            prompt += int(usage.get("prompt_tokens") or 0)
            completion += int(usage.get("completion_tokens") or 0)
        elif event.kind == EventKind.RUN_FINISHED:
            run_error = payload.get("error") or None
        elif event.kind == EventKind.TASK_STATUS_CHANGED:
            reason = payload.get("reason") or reason
    error = None
    if task.status is TaskStatus.FAILED:
        error = run_error or reason or "the task failed"
    return {
        "error": error,
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
        "cost_usd": None,
    }
