"""Tools the agent can call: a typed-function registry, the local corpus and the built-in tools."""

from core.tools.builtin import build_default_registry
from core.tools.corpus import (
    Corpus,
    CorpusQueryError,
    DocumentNotFoundError,
    DocumentPage,
    RefreshStats,
    SearchHit,
    html_to_text,
)
from core.tools.registry import Tool, ToolError, ToolRegistry, ToolResult, UnknownToolError

__all__ = [
    "Corpus",
    "CorpusQueryError",
    "DocumentNotFoundError",
    "DocumentPage",
    "RefreshStats",
    "SearchHit",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "UnknownToolError",
    "build_default_registry",
    "html_to_text",
]
