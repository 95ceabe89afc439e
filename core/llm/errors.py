"""Typed LLM failures, so callers decide on retry/fallback without knowing litellm's zoo.

Every message is a one-liner naming the model: the desk shows it in a status line and the
command line prints it as is. Messages pass through ``redact`` before they get here, so an API
key that a provider echoed back never reaches a log or a screen.
"""

from __future__ import annotations

from core.errors import ConfigurationError, EvidenceDeskError


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
    """A 429; ``retry_after_s`` is what the provider's ``Retry-After`` header asked us to wait, if any."""

    kind = "rate_limit"
    transient = True
    retry_after_s: float | None = None


class LLMServerError(LLMError):
    kind = "server_error"
    transient = True


class LLMConnectionError(LLMError):
    kind = "connection"
    transient = True


class LLMBadRequest(LLMError):
    """The provider refused the request itself (bad parameters, auth, unknown model): never retried."""

    kind = "bad_request"


class LLMMalformedResponse(LLMError):
    """The provider answered, but with a body we cannot read (bad JSON, no choices, no message).

    Kept apart from connection errors: the server was reached, so "cannot reach the provider" would
    send the analyst to check the wrong thing. Not retried: a proxy that mangles one reply usually
    mangles the next, and each retry is a billed request.
    """

    kind = "malformed_response"


class LLMUsageAnomaly(LLMMalformedResponse):
    """The reply's token counts are impossible (negative, or beyond any model's reach).

    Counted as given, a negative figure would lower the task's spent tokens and defeat
    ``max_task_tokens``; the reply is refused and the anomaly recorded with the call.
    """

    kind = "usage_anomaly"


class LLMConfigurationError(LLMError, ConfigurationError):
    """The call could not even be made (no API key, no endpoint): zero requests sent, never retried."""

    kind = "configuration"


class ScriptError(LLMError):
    """The scripted provider has no answer for this request (unknown model, turn past the end)."""

    kind = "script"


__all__ = [
    "LLMBadRequest",
    "LLMConfigurationError",
    "LLMConnectionError",
    "LLMError",
    "LLMMalformedResponse",
    "LLMRateLimited",
    "LLMServerError",
    "LLMTimeout",
    "LLMUsageAnomaly",
    "ScriptError",
]
