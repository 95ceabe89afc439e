"""Tools the agent can call: a typed-function registry, the local corpus and the built-in tools."""

from core.tools.builtin import build_default_registry
from core.tools.corpus import Corpus, CorpusQueryError, DocumentNotFoundError
from core.tools.corpus_models import DocumentPage, RefreshStats, SearchHit
from core.tools.registry import Tool, ToolError, ToolRegistry, ToolResult, UnknownToolError
from core.tools.text import html_to_text

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
