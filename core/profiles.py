"""Model profiles: per role, which endpoint, which key and which tuning a model call carries.

Everything here is passed to litellm per call (``ResolvedProfile.call_kwargs``), never through
process-wide environment variables such as ``OPENAI_API_BASE``: that is what lets the agent talk
to one server while the validator talks to another. No litellm import, so the settings layer and
the desk can use these types without paying for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, JsonValue, SecretStr

from core.errors import ConfigurationError
from core.secrets import KEYRING_SERVICE, remember_secret

# Keyless OpenAI-compatible servers still need *some* key for the OpenAI client to build a request;
# this placeholder is not a credential and a keyless server ignores it.
KEYLESS_PLACEHOLDER = "no-key"


class ModelRole(StrEnum):
    """Who makes a call; each role has its own profile."""

    AGENT = "agent"
    VALIDATOR = "validator"
    PLANNER = "planner"
    VALIDATOR_FALLBACK = "validator_fallback"
    PLANNER_FALLBACK = "planner_fallback"
    SCHEMA_FALLBACK = "schema_fallback"


# The flat ``*_model`` setting each role's model defaults to, so existing configurations keep working.
ROLE_MODEL_SETTING: dict[ModelRole, str] = {
    ModelRole.AGENT: "agent_model",
    ModelRole.VALIDATOR: "validator_model",
    ModelRole.PLANNER: "planner_model",
    ModelRole.VALIDATOR_FALLBACK: "validator_fallback_model",
    ModelRole.PLANNER_FALLBACK: "schema_fallback_model",
    ModelRole.SCHEMA_FALLBACK: "schema_fallback_model",
}


class ModelProfile(BaseModel):
    """One role's endpoint and tuning as the analyst writes it (TOML ``[profiles.<role>]``)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(
        default=None, description="litellm model name; empty: the role's *_model setting."
    )
    api_base: str | None = Field(default=None, description="Endpoint URL, e.g. http://127.0.0.1:11434.")
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable holding the key."
    )
    api_key_keyring: str | None = Field(
        default=None,
        description=f"Name of the OS keyring entry (service {KEYRING_SERVICE!r}) holding the key.",
    )
    no_api_key: bool = Field(default=False, description="The server needs no key (local servers).")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    context_window: int | None = Field(default=None, ge=256, description="Input tokens the model accepts.")
    extra: dict[str, JsonValue] = Field(
        default_factory=dict, description="Extra litellm parameters, e.g. num_ctx or extra_headers."
    )
    input_cost_per_mtok: float | None = Field(default=None, ge=0)
    output_cost_per_mtok: float | None = Field(default=None, ge=0)


class CandidateProfile(ModelProfile):
    """A validator the team may try before using it (TOML ``[validator_candidates.<name>]``): a
    profile plus, optionally, a folder of validator templates replacing the installed ones by name."""

    templates: Path | None = Field(
        default=None, description="Folder of validation*.md.j2 files replacing the installed ones."
    )


class ResolvedProfile(BaseModel):
    """A role's profile with every default applied and its key looked up: what one call sends."""

    model_config = ConfigDict(frozen=True)

    role: ModelRole
    model: str
    api_base: str | None = None
    api_key: SecretStr | None = None
    key_source: str = "litellm's default environment variable"
    no_api_key: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    context_window: int | None = None
    extra: dict[str, JsonValue] = Field(default_factory=dict)
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None

    def call_kwargs(self) -> dict[str, Any]:
        """The litellm keyword arguments this profile adds to a call (caller's own values win)."""
        kwargs: dict[str, Any] = dict(self.extra)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key.get_secret_value()
        elif self.no_api_key:
            kwargs["api_key"] = KEYLESS_PLACEHOLDER
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        return kwargs


KeyringLookup = Callable[[str, str], str | None]


def _keyring_lookup(service: str, name: str) -> str | None:
    import keyring
    from keyring.errors import KeyringError

    try:
        return keyring.get_password(service, name)
    except KeyringError:
        return None


class ProfileSettings(Protocol):
    """What resolving a role's profile reads of the settings.

    A protocol rather than ``core.config.Settings`` because the settings are built from this
    module's models: naming the class here, even for type checking only, tied the two modules
    into a circle. ``Settings`` satisfies it; so does any object a test or tool hands in.
    The role's model is read by its setting's name (``ROLE_MODEL_SETTING``).
    """

    @property
    def profiles(self) -> Mapping[ModelRole, ModelProfile]: ...
    @property
    def api_base(self) -> str | None: ...
    @property
    def validator_context_tokens(self) -> int | None: ...
    @property
    def validation_mode(self) -> object: ...


def role_model(settings: ProfileSettings, role: ModelRole) -> str | None:
    """The model a role uses: the flat ``*_model`` setting (a profile's ``model`` is copied there)."""
    value = getattr(settings, ROLE_MODEL_SETTING[role])
    return str(value) if value else None


def resolve_profile(
    settings: ProfileSettings,
    role: ModelRole,
    *,
    environ: Mapping[str, str] | None = None,
    keyring_lookup: KeyringLookup | None = None,
) -> ResolvedProfile | None:
    """Apply defaults and find the key; ``None`` when the role has no model (an unset fallback).

    A key source that is named but empty is a ``ConfigurationError`` naming the setting, raised
    before anything is sent. Blocking when the key is in the keyring: call it off the GUI thread.
    """
    model = role_model(settings, role)
    if model is None:
        return None
    profile = settings.profiles.get(role) or ModelProfile()
    env = os.environ if environ is None else environ
    api_key: SecretStr | None = None
    source = "litellm's default environment variable"
    where = f"profiles.{role.value}"
    if profile.no_api_key:
        source = "none (keyless server)"
    elif profile.api_key_env:
        value = env.get(profile.api_key_env, "")
        if not value:
            raise ConfigurationError(
                f"{where}.api_key_env names {profile.api_key_env}, which is not set in the environment "
                f"(model {model})"
            )
        api_key, source = SecretStr(value), f"environment variable {profile.api_key_env}"
    elif profile.api_key_keyring:
        value = (keyring_lookup or _keyring_lookup)(KEYRING_SERVICE, profile.api_key_keyring) or ""
        if not value:
            raise ConfigurationError(
                f"{where}.api_key_keyring names {profile.api_key_keyring!r}, which is not in the OS keyring "
                f"(service {KEYRING_SERVICE!r}; model {model})"
            )
        api_key, source = SecretStr(value), f"keyring entry {profile.api_key_keyring}"
    if api_key is not None:  # masked by value wherever it turns up (a provider's 401 echoing it)
        remember_secret(source, api_key.get_secret_value())
    api_base = profile.api_base or settings.api_base
    context_window = profile.context_window
    if role in (ModelRole.VALIDATOR, ModelRole.VALIDATOR_FALLBACK) and context_window is None:
        context_window = settings.validator_context_tokens
    return ResolvedProfile(
        role=role,
        model=model,
        api_base=api_base,
        api_key=api_key,
        key_source=source,
        no_api_key=profile.no_api_key,
        temperature=profile.temperature,
        max_tokens=profile.max_tokens,
        context_window=context_window,
        extra=dict(profile.extra),
        input_cost_per_mtok=profile.input_cost_per_mtok,
        output_cost_per_mtok=profile.output_cost_per_mtok,
    )


def role_for_model(settings: ProfileSettings, model: str) -> ModelRole | None:
    """The first role (in ``ModelRole`` order) whose model is ``model``; callers that know better pass a role."""
    for role in ModelRole:
        if role_model(settings, role) == model:
            return role
    return None


def roles_for_task(settings: ProfileSettings, team: str | None) -> list[ModelRole]:
    """The roles a new task will call: a configuration that cannot serve them is refused up front."""
    roles = [ModelRole.AGENT]
    if str(settings.validation_mode) != "off":
        roles.append(ModelRole.VALIDATOR)
    if team == "auto":
        roles.append(ModelRole.PLANNER)
    return roles


__all__ = [
    "KEYLESS_PLACEHOLDER",
    "ROLE_MODEL_SETTING",
    "CandidateProfile",
    "ModelProfile",
    "ModelRole",
    "ResolvedProfile",
    "resolve_profile",
    "role_for_model",
    "role_model",
    "roles_for_task",
]
