"""API keys: kept in the OS keyring (or the environment), never in files or the database.

The desk stores keys here; every entry point loads them into its own process environment, where
litellm finds them and where export redaction knows to mask them.
"""

from __future__ import annotations

import os

KEYRING_SERVICE = "evidence-desk"
API_KEY_NAMES: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "OPENROUTER_API_KEY",
    "AZURE_API_KEY",
)


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
