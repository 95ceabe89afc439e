"""API keys: kept in the OS keyring (or the environment), never in files or the database.

The desk stores keys here; every entry point loads them into its own process environment, where
litellm finds them and where export redaction knows to mask them.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

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
    # The literal comes first and the word boundary is checked behind it: a leading ``\b`` stops
    # ``re`` from searching for the literal, which made each scan several times slower.
    ("sk- style API key", r"sk-(?<![A-Za-z0-9_]sk-)[A-Za-z0-9_\-]{8,}", "sk-"),
    ("Google-style API key", r"AIza(?<![A-Za-z0-9_]AIza)[0-9A-Za-z_\-]{20,}", "AIza"),
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


class KeyringLoad:
    """The keyring read once, in a worker thread, started when convenient and awaited where needed.

    The desk's start does not wait for it (backend discovery and a desktop service can take
    hundreds of milliseconds, more than the whole queue): it starts after the queue has filled,
    and whatever is about to reach a provider calls ``wait`` first, so no run goes without its keys.
    """

    def __init__(self, load: Callable[[], list[str]] = load_api_keys_into_env) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self.loaded: list[str] = []
        self.error: BaseException | None = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def start(self) -> None:
        """Begin the read in a daemon thread (a second call does nothing)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="keyring-load", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self.loaded = self._load()
        except Exception as exc:  # a broken keyring must not stop the desk: said, and no keys from it
            self.error = exc
            log.warning("reading API keys from the keyring failed", exc_info=exc)
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Start the read if nobody has, and block until it is over; False if ``timeout`` ran out."""
        self.start()
        return self._done.wait(timeout)


# ---------------------------------------------------------------------- secret shapes
# Shapes of secrets found in text (answers, documents, tool results), whatever variable held them.
# The maintained set comes from detect-secrets' regex plugins; the few it lacks are added here. Only
# plugins whose patterns match the secret itself are used: keyword and entropy plugins, and those
# whose patterns span arbitrary text (basic-auth URLs), would mask ordinary prose and JSON.
OWN_SHAPES: tuple[tuple[str, str], ...] = (
    # A whole PEM block, not just its header, so the key material goes too (detect-secrets flags the header).
    (
        "Private Key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("Anthropic API key", r"sk-ant-(?<![A-Za-z0-9_]sk-ant-)[A-Za-z0-9_\-]{20,}"),
    # detect-secrets' JWT pattern stops lazily before the signature; this one takes all three parts.
    ("JSON Web Token", r"eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_.+/=-]*"),
)


@dataclass(frozen=True)
class SecretShape:
    kind: str
    pattern: str
    ignore_case: bool = False


def _detect_secrets_shapes() -> list[SecretShape]:
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    plugins: list[type[RegexBasedDetector]] = [
        AWSKeyDetector,
        AzureStorageKeyDetector,
        DiscordBotTokenDetector,
        GitHubTokenDetector,
        GitLabTokenDetector,
        JwtTokenDetector,
        MailchimpDetector,
        NpmDetector,
        OpenAIDetector,
        PrivateKeyDetector,
        PypiTokenDetector,
        SendGridDetector,
        SlackDetector,
        SquareOAuthDetector,
        StripeDetector,
        TelegramBotTokenDetector,
        TwilioKeyDetector,
    ]
    shapes = []
    for plugin in plugins:
        for regex in plugin.denylist:  # type: ignore[attr-defined]  # a class attribute on every plugin
            if regex.flags & ~(re.IGNORECASE | re.UNICODE):
                continue  # verbose or multiline patterns do not combine into one scan
            kind = str(plugin.secret_type)  # a plain class attribute, typed as an abstract property
            shapes.append(SecretShape(kind, regex.pattern, bool(regex.flags & re.IGNORECASE)))
    return shapes


@functools.cache
def secret_shapes() -> tuple[SecretShape, ...]:
    """Every shape, most specific first: at one position the first alternative that matches wins."""
    ours = [SecretShape(kind, pattern) for kind, pattern in OWN_SHAPES]
    generic = [SecretShape(label, pattern) for label, pattern, _ in KEY_SHAPES]
    return (*ours, *_detect_secrets_shapes(), *generic)


@functools.cache
def secret_shape_regexes() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """``(kind, regex)`` in the order to apply them, each on its own.

    Separate scans, not one alternation: Python's ``re`` tries every branch at every position, which
    made one combined pattern 25 times slower on a 50 MB export. Applied in turn, multi-line blocks
    (PEM keys) go first, so a line-greedy shape (an npm token line) cannot swallow a block's header
    and leave its body behind.
    """
    return tuple(
        (shape.kind, re.compile(shape.pattern, re.IGNORECASE if shape.ignore_case else 0))
        for shape in secret_shapes()
    )


def keyring_secret_values() -> list[tuple[str, str]]:
    """``(name, value)`` of the API keys stored in the OS keyring; blocking, empty without a keyring."""
    import keyring
    from keyring.errors import KeyringError

    found: list[tuple[str, str]] = []
    for name in API_KEY_NAMES:
        try:
            value = keyring.get_password(KEYRING_SERVICE, name)
        except KeyringError:
            return found
        if value and len(value) >= MIN_SECRET_LENGTH:
            found.append((name, value))
    return found
