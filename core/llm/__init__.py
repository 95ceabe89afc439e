"""LLM access: the litellm gateway and the scripted provider. Importing this never imports litellm."""

from core.llm.errors import (
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    ScriptError,
)
from core.llm.gateway import (
    LLMGateway,
    LLMResponse,
    TokenUsage,
    ToolCallRequest,
    UsageRecord,
    provider_family,
    warm_up_litellm,
)
from core.llm.scripted import (
    Conversation,
    Script,
    ScriptedRequest,
    ScriptedStats,
    ScriptedToolCall,
    Turn,
    load_script,
    reset_scripted_stats,
    scripted_stats,
)

__all__ = [
    "Conversation",
    "LLMBadRequest",
    "LLMConnectionError",
    "LLMError",
    "LLMGateway",
    "LLMRateLimited",
    "LLMResponse",
    "LLMServerError",
    "LLMTimeout",
    "Script",
    "ScriptError",
    "ScriptedRequest",
    "ScriptedStats",
    "ScriptedToolCall",
    "TokenUsage",
    "ToolCallRequest",
    "Turn",
    "UsageRecord",
    "load_script",
    "provider_family",
    "reset_scripted_stats",
    "scripted_stats",
    "warm_up_litellm",
]
