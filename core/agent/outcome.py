"""What a run reports: its progress while it works, its outcome when it ends, and the snapshot rules.

Kept apart from the loop so the records the team scheduler, the task service and the desk read
have one small home, and the loop module holds only the steps.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from core.domain.facts import FinishReason

COMPACT_SNAPSHOT_KEYS = (
    "iteration",
    "provider",
    "model",
    "message_count",
    "tool_names",
    "message_chars",
    "tool_schema_chars",
    "max_tokens",
    "temperature",
    "thinking",
)
_SECRET_KEYS = frozenset(
    {"api_key", "apikey", "authorization", "x-api-key", "api-key", "headers", "extra_headers"}
)


class RunStep(BaseModel):
    """Where one agent run is (its phase, iteration, tool): the loop tells its caller, which turns it
    into the task-level ``core.events.RunProgress`` notice the desk shows."""

    run_id: str
    session_id: str
    iteration: int
    phase: str  # "llm" | "tools" | "finalizing" | "finished"
    current_tool: str | None = None
    node_id: str | None = None


class RunOutcome(BaseModel):
    run_id: str
    session_id: str
    output_text: str
    finish_reason: FinishReason
    iterations: int
    error: str | None = None
    pending_tool_calls: bool = False  # the last reply asked for tools that were not offered
    messages: list[dict[str, Any]] = Field(default_factory=list)
    # How many of ``messages`` the run was handed as history: this run recorded only the rest
    # (its input messages and its turns), so the session's log holds those after what it held.
    history_len: int = 0

    @property
    def usable(self) -> bool:
        return self.finish_reason.usable and bool(self.output_text.strip())


def scrub_secrets(value: Any) -> Any:
    """Drop anything that looks like a credential before it can reach the event log."""
    if isinstance(value, dict):
        return {k: scrub_secrets(v) for k, v in value.items() if str(k).lower() not in _SECRET_KEYS}
    if isinstance(value, list):
        return [scrub_secrets(v) for v in value]
    return value


# A string longer than this is measured in pieces rather than serialised whole.
_PIECE = 1 << 20


def _light(obj: Any, bodies: list[int]) -> Any:
    """``obj`` with every long string emptied, the length of its JSON body added to ``bodies``."""
    if isinstance(obj, str) and len(obj) > _PIECE:
        bodies.append(
            sum(
                len(json.dumps(obj[at : at + _PIECE], ensure_ascii=False)) - 2
                for at in range(0, len(obj), _PIECE)
            )
        )
        return ""
    if isinstance(obj, dict):
        return {k: _light(v, bodies) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_light(v, bodies) for v in obj]
    return obj


def _chars(obj: Any) -> int:
    """``len(json.dumps(obj, ensure_ascii=False, default=str))`` without the dump of a long text
    (a 50 MB answer was serialised twice per turn only to be measured): JSON escapes each character
    on its own, so a string's body measures the same in pieces."""
    if not _has_long_text(obj):  # the usual case: dump as is, no lightened copy built
        return len(json.dumps(obj, ensure_ascii=False, default=str))
    bodies: list[int] = []
    light = _light(obj, bodies)
    return len(json.dumps(light, ensure_ascii=False, default=str)) + sum(bodies)


def _has_long_text(obj: Any) -> bool:
    """Whether ``obj`` holds a string ``_light`` would empty; a walk that copies nothing.

    A loop over a stack, not recursion through generators: it runs for every message the agent
    loop adds (twice a turn), where the generators cost more than the dump they guard."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > _PIECE:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


__all__ = ["COMPACT_SNAPSHOT_KEYS", "RunOutcome", "RunStep", "scrub_secrets"]
