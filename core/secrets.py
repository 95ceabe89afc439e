"""API keys: kept in the OS keyring (or the environment), never in files or the database.

The desk stores keys here; every entry point loads them into its own process environment, where
litellm finds them and where export redaction knows to mask them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

KEYRING_SERVICE = "evidence-desk"
API_KEY_NAMES: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "OPENROUTER_API_KEY",
    "AZURE_API_KEY",
)


# What counts as a secret, in one place: error messages (the gateway) and exported bundles
# (redaction) must mask the same things.
SECRET_ENV_NAME = re.compile(r"(API_KEY|_KEY|TOKEN|SECRET)$", re.IGNORECASE)
MIN_SECRET_LENGTH = 8
KEY_SHAPES: tuple[tuple[str, str, str], ...] = (
    # (label, regex, a substring every match contains: a cheap pre-check)
    ("sk- style API key", r"\bsk-[A-Za-z0-9_\-]{8,}", "sk-"),
    ("Google-style API key", r"\bAIza[0-9A-Za-z_\-]{20,}", "AIza"),
)


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(name, value)`` of environment variables that hold secrets, by name and length."""
    env = os.environ if environ is None else environ
    return [
        (name, env[name])
        for name in sorted(env)
        if len(env[name]) >= MIN_SECRET_LENGTH and SECRET_ENV_NAME.search(name)
    ]


def load_api_keys_into_env() -> list[str]:
    """Copy keyring keys into the environment (never overriding it); returns the names loaded.

    Blocking (a keyring may talk to a desktop service): the desk calls it off the GUI thread. No
    keyring backend (a headless machine) simply means no keys from there.
    """
    import keyring
    from keyring.errors import KeyringError

    loaded: list[str] = []
    for name in API_KEY_NAMES:
        if os.environ.get(name):
            continue
        try:
            secret = keyring.get_password(KEYRING_SERVICE, name)
        except KeyringError:
            return loaded
        if secret:
            os.environ[name] = secret
            loaded.append(name)
    return loaded
