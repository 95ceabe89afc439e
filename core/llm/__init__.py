"""LLM access: the litellm gateway and the scripted provider. Importing this never imports litellm.

Names load on first use (PEP 562): the desk's start reads a script or a provider name from
``scripted`` and must not pay for the gateway (httpx, the endpoint resolver) before its queue shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.llm.errors import (
        LLMBadRequest,
        LLMConfigurationError,
        LLMConnectionError,
        LLMError,
        LLMMalformedResponse,
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
        before_sending,
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

_HOMES = {
    "Conversation": "core.llm.scripted",
    "LLMBadRequest": "core.llm.errors",
    "LLMConfigurationError": "core.llm.errors",
    "LLMConnectionError": "core.llm.errors",
    "LLMError": "core.llm.errors",
    "LLMGateway": "core.llm.gateway",
    "LLMMalformedResponse": "core.llm.errors",
    "LLMRateLimited": "core.llm.errors",
    "LLMResponse": "core.llm.gateway",
    "LLMServerError": "core.llm.errors",
    "LLMTimeout": "core.llm.errors",
    "Script": "core.llm.scripted",
    "ScriptError": "core.llm.errors",
    "ScriptedRequest": "core.llm.scripted",
    "ScriptedStats": "core.llm.scripted",
    "ScriptedToolCall": "core.llm.scripted",
    "TokenUsage": "core.llm.gateway",
    "ToolCallRequest": "core.llm.gateway",
    "Turn": "core.llm.scripted",
    "UsageRecord": "core.llm.gateway",
    "before_sending": "core.llm.gateway",
    "load_script": "core.llm.scripted",
    "provider_family": "core.llm.gateway",
    "reset_scripted_stats": "core.llm.scripted",
    "scripted_stats": "core.llm.scripted",
    "warm_up_litellm": "core.llm.gateway",
}

__getattr__ = lazy_exports(__name__, _HOMES, globals())

__all__ = [
    "Conversation",
    "LLMBadRequest",
    "LLMConfigurationError",
    "LLMConnectionError",
    "LLMError",
    "LLMGateway",
    "LLMMalformedResponse",
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
    "before_sending",
    "load_script",
    "provider_family",
    "reset_scripted_stats",
    "scripted_stats",
    "warm_up_litellm",
]
