"""Who judged a verdict: the validator's identity and the short ``validator_version`` over it.

A verdict is only comparable with another when the same judge gave both. The judge is more than
its model name: the role's tuning and endpoint, the exact prompt templates, the policy settings
that turn a reply into a verdict, and the product's own code. Each verdict records all of them
(``ValidationDebug.validator``) and a 12-hex-digit id over their canonical JSON
(``validator_version``), so calibration can group verdicts by judge and a replay can tell its
candidate's verdicts from the live ones.

No credential enters the identity: the endpoint is its host and port only, and the profile's
key source and ``extra`` parameters (which may carry headers) are left out.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from core.config import Settings
from core.profiles import ModelProfile, ModelRole
from core.validation.prompt import INSTALLED, TemplateSet, template_digests
from core.version import app_version

__all__ = [
    "IdentityCache",
    "ValidatorIdentity",
    "endpoint_host",
    "validator_identity",
    "verdict_policy_settings",
]

VERSION_CHARS = 12


class ValidatorIdentity(BaseModel):
    """Everything that makes one judge differ from another, and the short id over it."""

    model_config = ConfigDict(frozen=True)

    model: str
    endpoint_host: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    templates: dict[str, str] = Field(default_factory=dict)  # template name -> sha256
    template_set: str = "installed"
    policy: dict[str, JsonValue] = Field(default_factory=dict)
    product_version: str = ""

    @property
    def version(self) -> str:
        """The short id: sha256 over the canonical JSON of every field but the templates' label
        (their digests say what they are; a candidate promoted unchanged keeps its version)."""
        fields = self.model_dump(mode="json", exclude={"template_set"})
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:VERSION_CHARS]

    def as_record(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "validator_version": self.version}


def endpoint_host(api_base: str | None) -> str | None:
    """The host (and port) of an endpoint URL: never its user, password, path or query."""
    if not api_base:
        return None
    parts = urlsplit(api_base if "//" in api_base else f"//{api_base}")
    if parts.hostname is None:
        return None
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{parts.hostname}:{port}" if port is not None else parts.hostname


def _file_digest(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def verdict_policy_settings(settings: Settings) -> dict[str, JsonValue]:
    """The settings that shape a verdict beyond the model and its prompts, by name.

    The one list of them: a setting added here changes every validator version, so add one only
    when it changes what verdict an answer gets. The budgets are here because a verdict that runs
    out of time is a ``validator_error``; the coherence thresholds because they decide whether an
    acceptance counts.
    """
    return {
        "validation_mode": str(settings.validation_mode),
        "trigger_keywords": [k.strip() for k in settings.trigger_keywords if k.strip()],
        "require_verified_citations": settings.require_verified_citations,
        "validator_context_tokens": settings.validator_context_tokens,  # the chunk budget's window
        "max_schema_retries": settings.max_schema_retries,
        "schema_stuck_after": settings.schema_stuck_after,
        "validator_timeout_s": settings.validator_timeout_s,
        "validator_budget_s": settings.validator_budget_s,
        "validator_budget_per_chunk_s": settings.validator_budget_per_chunk_s,
        "coherence_min_score": settings.coherence_min_score,
        "coherence_max_issues": settings.coherence_max_issues,
        "coherence_max_missing_requirements": settings.coherence_max_missing_requirements,
        "coherence_text_check": settings.coherence_text_check,
        "coherence_min_citations": settings.coherence_min_citations,
        "validator_fallback_model": settings.validator_fallback_model or settings.schema_fallback_model,
        "rules_sha256": _file_digest(settings.rules),
    }


def validator_identity(settings: Settings, templates: TemplateSet = INSTALLED) -> ValidatorIdentity:
    """The identity of the validator ``settings`` configure, judging with ``templates``.

    Reads the rules file and the templates (small files): call it off the desk's thread.
    """
    profile = settings.profiles.get(ModelRole.VALIDATOR) or ModelProfile()
    return ValidatorIdentity(
        model=settings.validator_model,
        endpoint_host=endpoint_host(profile.api_base or settings.api_base),
        temperature=profile.temperature,
        max_tokens=profile.max_tokens,
        templates=template_digests(templates),
        template_set=templates.label,
        policy=verdict_policy_settings(settings),
        product_version=app_version(),
    )


class IdentityCache:
    """One judge's identity record, built again only when something it is made of changed.

    Every verdict records its judge's identity, and building it (the templates and rules file
    read and hashed, the canonical JSON hashed) on every verdict cost a worker-thread hop and
    more of a replay's own time than judging's bookkeeping. A judge's settings never change (a
    new ``ValidationService`` is built when they do) and its templates are part of the key; the
    rules file can be edited while a judge runs (the edit applies to its next verdict), so its
    bytes are part of the key too: a read of a small file, no hashing, no thread.
    """

    def __init__(self) -> None:
        self._key: tuple[TemplateSet, bytes | None] | None = None
        self._record = ""  # as JSON: each caller gets its own copy of the nested dicts

    async def record(self, settings: Settings, templates: TemplateSet) -> dict[str, Any]:
        """``validator_identity(settings, templates).as_record()``, from the cache when still true."""
        key = (templates, _file_bytes(settings.rules))
        if key != self._key:
            identity = await asyncio.to_thread(validator_identity, settings, templates)
            self._key, self._record = key, json.dumps(identity.as_record())
        record: dict[str, Any] = json.loads(self._record)
        return record


def _file_bytes(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None  # unreadable: the identity says so; readable again, the bytes differ from None
