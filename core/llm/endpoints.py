"""Per-call endpoint, key and tuning from the role profiles, for the gateway.

Kept out of ``gateway.py`` so the gateway only asks "what does this call add?". Profiles are
resolved once per role (a keyring read is blocking, so it happens in a worker thread), and a
missing key is refused here as a ``ConfigurationError`` naming the setting: nothing is sent and
nothing is retried.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from core.config import Settings
from core.errors import ConfigurationError
from core.llm.local import (
    fetch_served_window,
    is_ollama,
    ollama_model_info,
    ollama_num_ctx,
    prepare_ollama_model,
    served_window,
)
from core.llm.scripted import PROVIDER_NAME, request_text
from core.profiles import ModelRole, ResolvedProfile, resolve_profile, role_for_model, role_model

_SCRIPTED_PREFIX = f"{PROVIDER_NAME}/"


class EndpointResolver:
    """Resolved profiles per role, cached; safe to use from worker threads."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._cache: dict[ModelRole, ResolvedProfile | None] = {}
        self._lock = threading.Lock()

    def role_of(self, model: str, role: ModelRole | None) -> ModelRole | None:
        """The caller's role, whatever the model names; only a call naming no role (a test's or a
        tool's direct call) is matched to the first role configured with its model.

        By role, not by model name: a planner or validator naming the agent's model still has its
        own endpoint, key, window and prices.
        """
        if role is not None:
            return role
        return role_for_model(self.settings, model)

    def _cached(
        self, model: str, role: ModelRole | None
    ) -> tuple[ModelRole | None, ResolvedProfile | None, bool]:
        """The role a call resolves to and its cached profile; the flag says whether the answer is
        known already (no role: no profile), since the cache holds None for a role without one."""
        found = self.role_of(model, role)
        if found is None:
            return None, None, True
        with self._lock:
            if found in self._cache:
                return found, self._cache[found], True
        return found, None, False

    def profile(self, model: str, role: ModelRole | None = None) -> ResolvedProfile | None:
        """Blocking when the key is in the keyring (first use per role only)."""
        found, cached, known = self._cached(model, role)
        if known or found is None:
            return cached
        resolved = resolve_profile(self.settings, found)
        with self._lock:
            self._cache[found] = resolved
        return resolved

    async def resolved(self, model: str, role: ModelRole | None = None) -> ResolvedProfile | None:
        """``profile`` for the event loop: a worker-thread hop only the first time per role (a
        keyring read), the cached profile at once after that (a hop per verdict was a thread
        wake-up each way, slow on a busy machine, for a dictionary lookup)."""
        _, cached, known = self._cached(model, role)
        if known:
            return cached
        return await asyncio.to_thread(self.profile, model, role)

    def check_key(self, litellm: Any, profile: ResolvedProfile) -> None:
        """No key from the profile and none where litellm looks: refuse before anything is sent."""
        if profile.api_key is not None or profile.no_api_key or profile.model.startswith(_SCRIPTED_PREFIX):
            return
        try:
            found = litellm.validate_environment(model=profile.model, api_base=profile.api_base)
        except Exception:
            return  # litellm cannot tell; let the provider answer
        missing = [str(k) for k in found.get("missing_keys") or []]
        if not found.get("keys_in_environment", True) and missing:
            where = f"profiles.{profile.role.value}"
            raise ConfigurationError(
                f"{profile.model}: no API key ({', '.join(missing)} is not set): set it, or "
                f"{where}.api_key_env / {where}.api_key_keyring, or {where}.no_api_key = true for a keyless server"
            )

    def models_for(self, roles: list[ModelRole]) -> list[tuple[str, ModelRole]]:
        """``(model, role)`` for each role that has a model."""
        found = [(role_model(self.settings, role), role) for role in roles]
        return [(model, role) for model, role in found if model is not None]

    async def check_ready(self, litellm: Any, model: str, role: ModelRole) -> None:
        """Find the role's key now (a named source that is empty raises), then check litellm's own."""
        profile = await asyncio.to_thread(self.profile, model, role)
        if profile is not None:
            self.check_key(litellm, profile)

    async def call_kwargs(
        self,
        litellm: Any,
        *,
        model: str,
        role: ModelRole | None,
        provider: str,
        messages: list[dict[str, Any]],
        max_tokens: int | None,
    ) -> dict[str, Any]:
        """What the profile adds to one call: endpoint, key, tuning, extras, and Ollama's ``num_ctx``."""
        found = self.role_of(model, role)
        with self._lock:
            cached, profile = found in self._cache, self._cache.get(found) if found is not None else None
        if not cached:  # the first call per role may read the keyring: in a worker
            profile = await asyncio.to_thread(self.profile, model, role)
        if profile is None:  # a model no role names (a test's direct call): the top-level endpoint only
            base = self.settings.api_base
            return {"api_base": base} if base and not model.startswith(_SCRIPTED_PREFIX) else {}
        self.check_key(litellm, profile)
        kwargs = profile.call_kwargs()
        if is_ollama(provider):
            if ollama_model_info(model) is None:
                await asyncio.to_thread(prepare_ollama_model, litellm, model, profile.api_base)
            if "num_ctx" not in kwargs:
                chars = len(request_text(messages))
                kwargs["num_ctx"] = ollama_num_ctx(chars, max_tokens or profile.max_tokens)
        return kwargs

    def context_window(self, model: str, role: ModelRole | None = None) -> int | None:
        """The role's profile override, else what Ollama said (cached); None: ask litellm's map. No I/O."""
        role = self.role_of(model, role)
        configured = self.settings.profiles.get(role) if role is not None else None
        if configured is not None and configured.context_window:
            return configured.context_window
        if (
            role in (ModelRole.VALIDATOR, ModelRole.VALIDATOR_FALLBACK)
            and self.settings.validator_context_tokens
        ):
            return self.settings.validator_context_tokens
        info = ollama_model_info(model)
        if info is not None:
            value = info.get("max_input_tokens") or info.get("max_tokens")
            return int(value) if value else None
        with self._lock:
            profile = self._cache.get(role) if role is not None else None
        return served_window(profile.api_base if profile is not None else self.settings.api_base)

    async def prepare(self, litellm: Any, model: str, provider: str, role: ModelRole | None = None) -> None:
        """Fetch a local model's metadata in a worker before anyone reads it on the loop's thread."""
        profile = await asyncio.to_thread(self.profile, model, role)
        base = profile.api_base if profile is not None else self.settings.api_base
        if is_ollama(provider):
            await asyncio.to_thread(prepare_ollama_model, litellm, model, base)
        elif base and (profile is None or profile.context_window is None):
            # A llama.cpp server says the window it was started with; better than any assumption.
            await asyncio.to_thread(fetch_served_window, base)


__all__ = ["EndpointResolver"]
