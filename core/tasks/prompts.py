"""The agent-side prompts TaskService writes into a session."""

from __future__ import annotations

import json
from typing import Any

from core.evidence.wrapping import EXTERNAL_CONTENT_WARNING

AGENT_SYSTEM_PROMPT = (
    "You are a careful research agent working for an analyst. Use the tools to gather evidence "
    "before answering, and base every claim in your answer on evidence you gathered. Cite the "
    "documents you used by title. If the evidence does not settle something, say so plainly "
    "instead of guessing. " + EXTERNAL_CONTENT_WARNING
)


def task_message(text: str, output_schema: dict[str, Any] | None) -> str:
    if output_schema is None:
        return text
    schema = json.dumps(output_schema, indent=2, ensure_ascii=False)
    return (
        f"{text}\n\nYour final answer must be only a JSON value that matches this JSON schema "
        f"(no prose around it):\n{schema}"
    )


def validator_revision_message(recommended: str, issues: list[str], category: str | None = None) -> str:
    """The automatic retry's new user message, built from the validator's verdict.

    The failure category leads (seed 004: "flagged for `incomplete`: ...") so the agent knows
    which kind of correction is asked for before it reads the details.
    """
    flagged = category if category and category != "none" else None
    first = issues[0] if issues else recommended.strip()
    if flagged:
        lead = f"An automatic review of your previous answer flagged it for `{flagged}`"
        parts = [f"{lead}: {first}" if first else f"{lead}."]
    else:
        parts = ["An automatic review of your previous answer asked for a revision."]
    if recommended.strip():
        parts.append(recommended.strip())
    if issues:
        parts.append("Issues found:\n" + "\n".join(f"- {i}" for i in issues))
    if not recommended.strip() and not issues:
        parts.append("Check your answer against the evidence and answer the task again.")
    return "\n\n".join(parts)


def analyst_revision_message(prompt: str) -> str:
    return f"The analyst reviewing your answer asks for a revision:\n\n{prompt.strip()}"
