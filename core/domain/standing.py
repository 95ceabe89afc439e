"""Which of an attempt's decisions stands: the rule calibration and second reviews share.

An attempt's feedback rows, oldest first, are replayed: satisfied, revise and abandon each become
the standing decision; ``undo`` takes back the decision it follows (the one before it stands
again); ``reopen`` sets every earlier decision aside (the task is being decided afresh). What
remains is the standing decision, or none. The rows themselves are never edited: the history
keeps every decision, calibration counts only the one that stands.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

DECIDING = frozenset({"satisfied", "revise", "abandon"})
UNDO, REOPEN = "undo", "reopen"

R = TypeVar("R")


def standing(rows: Iterable[tuple[str, R]]) -> R | None:
    """The row that stands among ``(action, row)`` pairs given oldest first, or None."""
    stack: list[R] = []
    for action, row in rows:
        if action in DECIDING:
            stack.append(row)
        elif action == UNDO:
            if stack:
                stack.pop()
        elif action == REOPEN:
            stack.clear()
    return stack[-1] if stack else None


__all__ = ["DECIDING", "REOPEN", "UNDO", "standing"]
