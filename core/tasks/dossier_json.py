"""A task and its dossier as plain JSON-ready data: what ``list --json`` and ``show --json`` print.

In core rather than in the command line because audits and tests read the same shape, and the
command line is a leaf: nothing in core may import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.domain.carried import shown_name
from core.domain.records import TaskRecord

if TYPE_CHECKING:
    from core.store import Store


def task_json(t: TaskRecord) -> dict[str, Any]:
    """The queue's view of a task: status, outcome, score and version, never its evidence."""
    return {
        "id": t.id,
        "title": t.title,
        "status": t.status.value,
        "validation_outcome": t.validation_outcome.value if t.validation_outcome else None,
        "score": t.latest_score,
        "category": t.latest_category,
        "attempts": t.attempt_count,
        "version": t.version,
        "read_only": t.read_only,
        "updated_at": t.updated_at.isoformat(),
    }


def status_flags_json(t: TaskRecord) -> dict[str, Any]:
    """What the task's status lets happen, read from the one flag table and the transition table:
    ``flags`` (``core.domain.status.STATUS_FLAGS``, with ``requires_user_action`` for who asked a
    revision) and the analyst's ``allowed_actions`` (what the desk enables)."""
    from core.tasks.policy import requires_user_action
    from core.tasks.review import allowed_actions

    flags = t.status.flags._asdict() | {"requires_user_action": requires_user_action(t)}
    return {"flags": flags, "allowed_actions": sorted(a.value for a in allowed_actions(t))}


async def task_dossier(store: Store, task_id: str, *, resolve: bool = True) -> dict[str, Any]:
    """Everything stored about a task, as plain JSON-ready data (``show`` and audits).

    With ``resolve=False`` chunked evidence stays as references, for a reader that streams it.
    """
    from core.tasks.dossier import load_dossier
    from core.tasks.override import dossier_overrides

    d = await load_dossier(store, task_id, resolve=resolve)
    data = d.model_dump(mode="json")
    data["task"] = {
        **task_json(d.task),
        "text": d.task.text,
        "team": shown_name(d.task.team_spec),  # the template's file name, never a stored reference
        "output_schema": d.task.output_schema,
        "origin": d.task.origin,
        **status_flags_json(d.task),
    }
    data["usage"] = d.usage().model_dump()
    data["analyst_verdicts"] = [v.model_dump(mode="json") for v in dossier_overrides(d).values()]
    per_attempt = d.attempt_usage()
    for a in data["attempts"]:
        a["usage"] = per_attempt[a["index"]].model_dump()
    return data
