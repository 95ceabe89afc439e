"""PostgreSQL's text types cannot hold U+0000; model output and tool results sometimes do.

A NUL in a task, an answer or a tool result made the whole write fail on PostgreSQL (SQLite keeps
it). Every string parameter sent to PostgreSQL has its NULs replaced with U+FFFD, the Unicode
replacement character, in one place for every statement, so the rest of the text is stored and a
reader sees where something was. JSON columns are unaffected: their NULs travel escaped.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

NUL = "\x00"
REPLACEMENT = "\ufffd"


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(NUL, REPLACEMENT) if NUL in value else value
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub(v) for v in value)
    return value


def install_nul_guard(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "before_cursor_execute", retval=True)
    def _guard(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _executemany: bool
    ) -> tuple[str, Any]:
        return statement, _scrub(parameters)


__all__ = ["install_nul_guard"]
