"""Rendering of the validator prompts from the templates under ``resources/prompts``.

Order follows seed 004 (critical context at the start and the end): the rubric in the system
message; then the task, the analyst rules, the evidence, the recent conversation, the execution
metadata, the previous feedback, the answer under review, and the output contract with a short
restatement of the rubric. The evidence text arrives already rendered (and fenced) by
``core.evidence``; nothing here cuts it.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from core.evidence.wrapping import neutralise, wrap_external, wrap_external_parts
from core.resources import prompts_dir
from core.team.synthesis import synthesis_without_evidence

__all__ = [
    "HISTORY_MESSAGES",
    "INSTALLED",
    "UNDER_REVIEW",
    "TemplateSet",
    "format_history",
    "render_template",
    "system_prompt",
    "template_digests",
    "templates_in_use",
    "use_templates",
    "validator_template_names",
    "wrap_answer",
    "wrap_answer_parts",
    "wrap_task",
]

HISTORY_MESSAGES = 30


@dataclass(frozen=True, slots=True)
class TemplateSet:
    """Validator templates that replace installed ones by name (a workspace's own, a candidate's).

    Frozen and hashable so each set gets one cached jinja environment. ``label`` says where the
    replacements came from, for the validator's identity and for people.
    """

    overrides: tuple[tuple[str, str], ...] = ()
    label: str = "installed"

    @classmethod
    def of(cls, overrides: Mapping[str, str], label: str) -> TemplateSet:
        return cls(tuple(sorted(overrides.items())), label) if overrides else INSTALLED


INSTALLED = TemplateSet()
# The template set of the verdict being judged: a context variable, because one process judges
# live tasks and a candidate's replays at once, and every template render sits deep in the judge.
_TEMPLATES: contextvars.ContextVar[TemplateSet] = contextvars.ContextVar(
    "validator_templates", default=INSTALLED
)


@contextlib.contextmanager
def use_templates(templates: TemplateSet) -> Iterator[None]:
    """Render with ``templates`` inside the block (and in tasks it starts), the installed ones after."""
    token = _TEMPLATES.set(templates)
    try:
        yield
    finally:
        _TEMPLATES.reset(token)


def templates_in_use() -> TemplateSet:
    return _TEMPLATES.get()


@lru_cache(maxsize=16)
def _environment(templates: TemplateSet = INSTALLED) -> Any:
    import jinja2

    installed = jinja2.FileSystemLoader(str(prompts_dir()))
    loader: Any = installed
    if templates.overrides:
        loader = jinja2.ChoiceLoader([jinja2.DictLoader(dict(templates.overrides)), installed])
    env = jinja2.Environment(
        loader=loader,
        autoescape=False,  # markdown for a model, not HTML; external content is fenced instead
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["fence"] = wrap_task
    return env


def render_template(name: str, **values: Any) -> str:
    return str(_environment(_TEMPLATES.get()).get_template(name).render(**values))


def validator_template_names() -> list[str]:
    """Every installed template a verdict may render (the validator's prompts and their parts)."""
    return sorted(p.name for p in prompts_dir().glob("validation*.md.j2"))


def template_source(name: str, templates: TemplateSet = INSTALLED) -> str:
    """The text of one template as ``templates`` has it (the installed one when not replaced)."""
    return str(_environment(templates).loader.get_source(_environment(templates), name)[0])


def template_digests(templates: TemplateSet = INSTALLED) -> dict[str, str]:
    """sha256 of each validator template as ``templates`` has it: the prompt part of a validator's
    identity, so an edited template makes a new validator version."""
    return {
        name: hashlib.sha256(template_source(name, templates).encode("utf-8")).hexdigest()
        for name in validator_template_names()
    }


def system_prompt(*, rubric: bool = True) -> str:
    """The role, and (seed 004) the evaluation rubric: instructions belong to the system message,
    ahead of the material under judgement. Chunk reviews decide no verdict, so they go without it."""
    return render_template("validation_system.md.j2", rubric=rubric).strip()


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


UNDER_REVIEW = "\x00under-review"
"""``format_history``'s ``evidence_texts`` value for the answer being judged: the prompt carries it
once, as the final answer (a 50 MB answer was otherwise in the prompt twice)."""


def format_history(
    history: list[dict[str, Any]],
    evidence_ids: dict[str, str] | None = None,
    *,
    pointers_only: bool = False,
    evidence_texts: dict[str, str] | None = None,
) -> tuple[str, int]:
    """The last ``HISTORY_MESSAGES`` messages, fenced as external content (they quote tool output).

    The history never repeats what the evidence section already shows: the history is for the
    trajectory, and repeating evidence would double the prompt (and push large evidence into
    chunking at half the real capacity). So a tool result that is an evidence item (``evidence_ids``,
    by tool-call id), an answer whose text is an evidence item (``evidence_texts``, text to id: an
    earlier attempt's answer), and the team evidence inside a synthesis request are shown as
    pointers. ``pointers_only`` does the same for every tool result, for prompts whose budget has
    no room for them (the chunked verdict).
    """
    recent = history[-HISTORY_MESSAGES:]
    if not recent:
        return "", 0
    ids = evidence_ids or {}
    texts = evidence_texts or {}
    lines = []
    for m in recent:
        content = m.get("content")
        size = len(content) if isinstance(content, str) else len(str(content or ""))
        if m.get("role") == "tool":
            eid = ids.get(str(m.get("tool_call_id")))
            if eid is not None:
                m = {
                    **m,
                    "content": f"[result recorded as evidence {eid}, {size} characters: see the evidence]",
                }
            elif pointers_only:
                m = {**m, "content": f"[tool result of {size} characters, not repeated here]"}
        elif isinstance(content, str) and m.get("role") == "assistant" and content in texts:
            eid = texts[content]
            pointer = (
                f"[the answer under review, {size} characters: shown in full as the final answer to judge]"
                if eid == UNDER_REVIEW
                else f"[answer recorded as evidence {eid}, {size} characters: see the evidence]"
            )
            m = {**m, "content": pointer}
        elif isinstance(content, str) and m.get("role") == "user":
            stripped = synthesis_without_evidence(
                content, "[shown in the evidence section under the same ids; not repeated here]"
            )
            if stripped is not None:
                m = {**m, "content": stripped}
        lines.append(_message_line(m))
    return wrap_external("\n\n".join(lines), label="conversation-history"), len(recent)


def wrap_task(task_text: str, label: str = "task") -> str:
    """The analyst's task is quoted text like the rest: it may come from a batch file or a pasted
    e-mail, and a ``</EXTERNAL-CONTENT>`` in it must not be able to end a fence or open a fake one
    between the fences. The templates apply it as the ``fence`` filter so the callers pass the
    task as written."""
    return wrap_external(task_text, label=label)


def wrap_answer(answer: str) -> str:
    return "".join(wrap_answer_parts(answer))


def wrap_answer_parts(answer: str) -> tuple[str, str, str]:
    return wrap_external_parts(answer, label="final-answer")


def one_line(text: str) -> str:
    return neutralise(text).replace("\r", " ").replace("\n", " ")
