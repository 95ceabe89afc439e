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
from collections.abc import Callable, Iterable, Mapping
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


# ---------------------------------------------------------------------- credentials by value
# A key is a key whatever its variable is called: the settings name the variables and keyring
# entries that hold keys (a profile's ``api_key_env`` may be ``VLLM_APIKEY``), and whatever the
# program reads as a credential (a key resolved for a call, the database password, the signing
# key) is remembered here by value. Every way out masks these values, whatever text carries them.
_registry_lock = threading.Lock()
_named_env: set[str] = set()
_named_keyring: set[str] = set()
_remembered: dict[str, str] = {}
_version = [0]  # bumped on every change, so a reader may cache what it derived from the registry


def name_credentials(*, env: Iterable[str | None] = (), keyring: Iterable[str | None] = ()) -> None:
    """Environment variables and keyring entries the settings say hold credentials."""
    with _registry_lock:
        _named_env.update(name for name in env if name)
        _named_keyring.update(name for name in keyring if name)
        _version[0] += 1


def remember_secret(label: str, value: str | None) -> None:
    """A value the program now holds as a credential; masked by value from here on.

    ``label`` says where it came from (never the value); short values are not remembered, since
    masking a four-letter word everywhere would deface ordinary text.
    """
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _registry_lock:
            if value not in _remembered:
                _remembered[value] = label
                _version[0] += 1


def credentials_version() -> tuple[int, int]:
    """Changes whenever the known credentials may have: the registry's changes and the environment's
    size (the keyring load adds variables). Cheap, for callers that cache ``credential_values``."""
    return _version[0], len(os.environ)


def _is_secret_name(name: str) -> bool:
    return bool(SECRET_ENV_NAME.search(name)) or name in _named_env


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(name, value)`` of environment variables that hold secrets: by name shape or named in settings."""
    env = os.environ if environ is None else environ
    with _registry_lock:
        return [
            (name, env[name])
            for name in sorted(env)
            if len(env[name]) >= MIN_SECRET_LENGTH and _is_secret_name(name)
        ]


def remembered_secret_values() -> list[tuple[str, str]]:
    """``(label, value)`` of every credential the program has read (``remember_secret``)."""
    with _registry_lock:
        return [(label, value) for value, label in _remembered.items()]


def credential_values(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Every credential known by value, longest first (a value containing another goes whole)."""
    values = dict(secret_env_values(environ))
    for label, value in remembered_secret_values():
        if value not in values.values():
            values.setdefault(label, value)
    return sorted(values.items(), key=lambda kv: -len(kv[1]))


def mask_secrets(text: str, mask: str = "[redacted]") -> str:
    """``text`` with every known credential value and every secret shape masked.

    For what the program says about itself (error lines, stderr, stored provider errors, ``--json``
    errors): short texts, so every scan runs on each. Exports use ``core.bundle.redact.Redactor``,
    which applies the same values and shapes with counts.
    """
    if not text:
        return text
    for _label, value in credential_values():
        if value in text:
            text = text.replace(value, mask)
    for _kind, regex in secret_shape_regexes():
        text = regex.sub(mask, text)
    return text


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
        remember_secret(f"keyring entry {name}", secret)
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


# The flags a pattern may carry into a scoped group ``(?x:...)``; ``re.UNICODE`` is the default for text.
_SCOPED_FLAGS = ((re.VERBOSE, "x"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.ASCII, "a"))


def _with_own_flags(regex: re.Pattern[str]) -> str | None:
    """The pattern with its flags (verbose, multi-line, ...) written inside it, so it keeps its meaning
    when joined with others or compiled without them; ``None`` for flags that cannot be scoped.

    detect-secrets compiles its Slack webhook pattern with ``re.VERBOSE``: dropping such patterns,
    as this module once did, left webhook URLs unmasked.
    """
    flags = regex.flags & ~(re.IGNORECASE | re.UNICODE)
    letters = ""
    for flag, letter in _SCOPED_FLAGS:
        if flags & flag:
            letters += letter
            flags &= ~flag
    if flags:
        return None
    # A newline before the closing parenthesis: a verbose pattern's last line may end in a comment.
    if not letters:
        return regex.pattern
    end = "\n)" if "x" in letters else ")"
    return f"(?{letters}:{regex.pattern}{end}"


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
            pattern = _with_own_flags(regex)
            if pattern is None:  # pragma: no cover - no plugin in use has such flags
                log.warning("secret pattern of %s skipped: flags %#x", plugin.__name__, regex.flags)
                continue
            kind = str(plugin.secret_type)  # a plain class attribute, typed as an abstract property
            shapes.append(SecretShape(kind, pattern, bool(regex.flags & re.IGNORECASE)))
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
    with _registry_lock:
        names = [*API_KEY_NAMES, *sorted(_named_keyring - set(API_KEY_NAMES))]
    for name in names:
        try:
            value = keyring.get_password(KEYRING_SERVICE, name)
        except KeyringError:
            return found
        if value and len(value) >= MIN_SECRET_LENGTH:
            remember_secret(f"keyring entry {name}", value)
            found.append((name, value))
    return found
