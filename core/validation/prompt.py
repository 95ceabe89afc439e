"""Rendering of the validator prompts from the templates under ``resources/prompts``.

Order follows long-context practice: the task, the rules and the rubric first, the evidence in the
middle, the recent conversation and the answer last, then a short restatement of the rubric. The
evidence text arrives already rendered (and fenced) by ``core.evidence``; nothing here cuts it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from core.evidence.wrapping import neutralise, wrap_external
from core.resources import prompts_dir

__all__ = [
    "HISTORY_MESSAGES",
    "format_history",
    "render_template",
    "system_prompt",
    "wrap_answer",
    "wrap_task",
]

HISTORY_MESSAGES = 30


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(prompts_dir())),
        autoescape=False,  # markdown for a model, not HTML; external content is fenced instead
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["fence"] = wrap_task
    return env


def render_template(name: str, **values: Any) -> str:
    return str(_environment().get_template(name).render(**values))


def system_prompt() -> str:
    return render_template("validation_system.md.j2").strip()


def _message_line(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        content = ""
    elif not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, default=str)
    calls = message.get("tool_calls") or []
    names = []
    for call in calls if isinstance(calls, list) else []:
        fn = call.get("function") if isinstance(call, dict) else None
        names.append(str(fn.get("name")) if isinstance(fn, dict) else "?")
    suffix = f" [tool calls: {', '.join(names)}]" if names else ""
    role = str(message.get("role", "?")).replace("\n", " ")
    return f"{role}{suffix}: {content}"


def format_history(
    history: list[dict[str, Any]],
    evidence_ids: dict[str, str] | None = None,
    *,
    pointers_only: bool = False,
) -> tuple[str, int]:
    """The last ``HISTORY_MESSAGES`` messages, fenced as external content (they quote tool output).

    A tool result that is already an evidence item is shown as a pointer to its id: the history
    is for the trajectory, and repeating every result would double the prompt (and push large
    evidence into chunking at half the real capacity). ``pointers_only`` does the same for every
    tool result, for prompts whose budget has no room for them (the chunked verdict).
    """
    recent = history[-HISTORY_MESSAGES:]
    if not recent:
        return "", 0
    ids = evidence_ids or {}
    lines = []
    for m in recent:
        if m.get("role") == "tool":
            eid = ids.get(str(m.get("tool_call_id")))
            size = len(str(m.get("content") or ""))
            if eid is not None:
                m = {
                    **m,
                    "content": f"[result recorded as evidence {eid}, {size} characters: see the evidence]",
                }
            elif pointers_only:
                m = {**m, "content": f"[tool result of {size} characters, not repeated here]"}
        lines.append(_message_line(m))
    return wrap_external("\n\n".join(lines), label="conversation-history"), len(recent)


def wrap_task(task_text: str, label: str = "task") -> str:
    """The analyst's task is quoted text like the rest: it may come from a batch file or a pasted
    e-mail, and a ``</EXTERNAL-CONTENT>`` in it must not be able to end a fence or open a fake one
    between the fences. The templates apply it as the ``fence`` filter so the callers pass the
    task as written."""
    return wrap_external(task_text, label=label)


def wrap_answer(answer: str) -> str:
    return wrap_external(answer, label="final-answer")


def one_line(text: str) -> str:
    return neutralise(text).replace("\r", " ").replace("\n", " ")
