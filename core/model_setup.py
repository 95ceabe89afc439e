"""What the Settings dialog asks about models: which local servers answer, and does a profile work.

The desk may not import ``core.llm``; these two calls are its door to it.
"""

from __future__ import annotations

from core.config import Settings
from core.llm.gateway import LLMGateway
from core.llm.local import LocalServer, detect_local_servers
from core.profiles import ModelRole, role_model

TEST_PROMPT = "Reply with the single word: ready"


async def try_connection(settings: Settings, role: ModelRole, *, timeout_s: float = 30.0) -> str:
    """One tiny call with ``role``'s profile; the model's answer, or the exact error raised.

    Raises ``ConfigurationError`` (no model, no key) or ``LLMError`` with the provider's message.
    """
    from core.errors import ConfigurationError

    model = role_model(settings, role)
    if model is None:
        raise ConfigurationError(f"profiles.{role.value}: no model is set for this role")
    gateway = LLMGateway(settings, retry_backoff_s=0.0)
    await gateway.check_ready([role])
    response = await gateway.complete(
        model=model,
        messages=[{"role": "user", "content": TEST_PROMPT}],
        max_tokens=16,
        timeout_s=timeout_s,
        num_retries=0,
        role=role,
    )
    return (response.content or "").strip() or f"(an empty answer, finish reason {response.finish_reason})"


__all__ = ["LocalServer", "detect_local_servers", "try_connection"]
