"""What a model call cost.

A call's price comes from litellm's cost map when it knows the model, else from the prices set
for models it does not know (local and private servers), else it counts as free; scripted models
are always free. The price is fixed when the call is made and stored with its response event, so
totals (``core.tasks.usage``) are sums of recorded facts and a later price change never rewrites
history.
"""

from __future__ import annotations

from typing import Any

from core.config import Settings
from core.llm.scripted import PROVIDER_NAME
from core.profiles import ResolvedProfile

_PER_MTOK = 1_000_000


def call_cost(
    litellm: Any,
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    settings: Settings,
    profile: ResolvedProfile | None = None,
) -> float:
    """USD for one call; 0.0 for scripted models and for unknown models without a set price.

    A price set on the role's profile wins over the workspace-wide ``llm_cost_per_mtok_*``.
    """
    price = call_price(litellm, model, prompt_tokens, completion_tokens, settings, profile)
    return 0.0 if price is None else price


def call_price(
    litellm: Any,
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    settings: Settings,
    profile: ResolvedProfile | None = None,
) -> float | None:
    """USD for one call, or None when no price is known for its model (a local server nobody priced).

    Scripted models and calls that used no tokens are priced at zero; so is a model whose price
    litellm's map or the analyst set to zero. Totals say "unknown" only when no call was priced.
    """
    if model.startswith(f"{PROVIDER_NAME}/") or (prompt_tokens <= 0 and completion_tokens <= 0):
        return 0.0
    known: float | None = None
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
        known = float(prompt_cost) + float(completion_cost)
    except Exception:  # ModelNotMappedError and friends: litellm has no price for this model
        pass
    price_in = settings.llm_cost_per_mtok_in
    price_out = settings.llm_cost_per_mtok_out
    if profile is not None and (
        profile.input_cost_per_mtok is not None or profile.output_cost_per_mtok is not None
    ):
        price_in, price_out = profile.input_cost_per_mtok, profile.output_cost_per_mtok
    if (known is not None and known > 0) or (price_in is None and price_out is None):
        return known
    # litellm prices local models (ollama/*) at zero; a price the analyst set says otherwise.
    return (prompt_tokens * (price_in or 0.0) + completion_tokens * (price_out or 0.0)) / _PER_MTOK


__all__ = ["call_cost", "call_price"]
