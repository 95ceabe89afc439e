"""Typed LLM failures, so callers decide on retry/fallback without knowing litellm's zoo.

Every message is a one-liner naming the model: the desk shows it in a status line and the
command line prints it as is. Messages pass through ``redact`` before they get here, so an API
key that a provider echoed back never reaches a log or a screen.
"""

from __future__ import annotations

from core.errors import EvidenceDeskError


class LLMError(EvidenceDeskError):
    """Base of every model call failure; ``transient`` says whether trying again may help."""

    kind: str = "llm"
    transient: bool = False

    def __init__(self, message: str, *, model: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.model = model
        if kind is not None:
            self.kind = kind


class LLMTimeout(LLMError):
    kind = "timeout"
    transient = True


class LLMRateLimited(LLMError):
    kind = "rate_limit"
    transient = True


class LLMServerError(LLMError):
    kind = "server_error"
    transient = True


class LLMConnectionError(LLMError):
    kind = "connection"
    transient = True


class LLMBadRequest(LLMError):
    """The provider refused the request itself (bad parameters, auth, unknown model): never retried."""

    kind = "bad_request"


class ScriptError(LLMError):
    """The scripted provider has no answer for this request (unknown model, turn past the end)."""

    kind = "script"


__all__ = [
    "LLMBadRequest",
    "LLMConnectionError",
    "LLMError",
    "LLMRateLimited",
    "LLMServerError",
    "LLMTimeout",
    "ScriptError",
]
