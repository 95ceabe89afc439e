"""Signing bundles, so that someone who rewrites a bundle's hashes cannot also claim its author.

Hash chains and the manifest catch edits by anyone who does not recompute them; a forger who does
recompute them is caught only by a signature. Each workspace has its own ed25519 key, kept in the OS
keyring (never in a file or the database), and signs the manifest's exact bytes, which pin every
entry's SHA-256 and every chain head. A reader trusts its own workspace's key and the fingerprints
listed in ``trusted-keys.txt`` in the config directory (one per line, anything after it a comment).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from core.bundle.format import canonical, sha256_hex
from core.errors import ConfigurationError
from core.secrets import remember_secret

__all__ = [
    "SignatureCheck",
    "check_signature",
    "fingerprint",
    "known_fingerprints",
    "signature_entry",
    "trusted_keys_file",
    "workspace_signing_key",
]

KEYRING_SIGNING_SERVICE = "evidence-desk-signing"
ALGORITHM = "ed25519"

SignatureStatus = Literal["unsigned", "known", "unknown", "invalid"]
STATUS_TEXT: dict[str, str] = {
    "unsigned": "unsigned",
    "known": "signed by a known key",
    "unknown": "signed by an unknown key",
    "invalid": "signature INVALID",
}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SignatureCheck:
    status: SignatureStatus
    fingerprint: str | None = None
    problem: str | None = None

    def describe(self) -> str:
        text = STATUS_TEXT[self.status]
        return f"{text} (fingerprint {self.fingerprint})" if self.fingerprint else text


def _public_raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def fingerprint(key: Ed25519PublicKey) -> str:
    """SHA-256 of the raw public key: what people compare and list in ``trusted-keys.txt``."""
    return sha256_hex(_public_raw(key))


def _keyring_user(db_url: str) -> str:
    """One key per workspace, named by where the workspace lives (a path or a password-less URL)."""
    from core.store.engine import display_name

    try:
        where = display_name(db_url)
    except Exception:  # an unparseable URL still names one workspace
        where = db_url
    return f"workspace:{sha256_hex(where.encode('utf-8'))[:32]}"


def workspace_signing_key(db_url: str, *, create: bool = True) -> Ed25519PrivateKey | None:
    """The workspace's key from the OS keyring, made on first use; ``None`` when there is no keyring.

    Blocking (a keyring may talk to a desktop service): async callers use a thread.
    """
    import keyring
    from keyring.errors import KeyringError

    user = _keyring_user(db_url)
    try:
        stored = keyring.get_password(KEYRING_SIGNING_SERVICE, user)
        if stored:
            remember_secret("workspace signing key", stored)
            return Ed25519PrivateKey.from_private_bytes(base64.b64decode(stored))
        if not create:
            return None
        key = Ed25519PrivateKey.generate()
        raw = key.private_bytes_raw()
        encoded = base64.b64encode(raw).decode("ascii")
        remember_secret("workspace signing key", encoded)
        keyring.set_password(KEYRING_SIGNING_SERVICE, user, encoded)
        if keyring.get_password(KEYRING_SIGNING_SERVICE, user) != encoded:
            _say_keyring_drops(keyring.get_keyring(), user)
            return None  # a key nobody can find again would sign each export with a stranger's key
        return key
    except (KeyringError, ValueError, binascii.Error):
        return None


_DROPPING_KEYRINGS: set[tuple[str, str]] = set()


def _say_keyring_drops(backend: object, user: str) -> None:
    """Once per keyring and workspace: the keyring accepted the key and did not keep it."""
    name = type(backend).__name__
    if (name, user) in _DROPPING_KEYRINGS:
        return
    _DROPPING_KEYRINGS.add((name, user))
    log.warning(
        "the OS keyring (%s) did not keep the workspace's signing key; exports stay unsigned "
        "until a keyring keeps what is written to it",
        name,
    )


def trusted_keys_file() -> Path:
    from core.config import user_config_file

    return user_config_file().parent / "trusted-keys.txt"


def _trusted(path: Path) -> set[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return set()
    except UnicodeDecodeError as exc:  # a clear refusal, not an internal error: the list is the user's
        raise ConfigurationError(
            f"{path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
            "it lists one SHA-256 key fingerprint per line"
        ) from None
    found = set()
    for line in text.splitlines():
        token = line.split("#", 1)[0].strip().split(maxsplit=1)
        if token and len(token[0]) == 64:
            found.add(token[0].lower())
    return found


def known_fingerprints(db_url: str | None, trusted: Path | None = None) -> set[str]:
    """The workspace's own key plus the trusted list; blocking (keyring and file)."""
    known = _trusted(trusted or trusted_keys_file())
    if db_url is not None:
        own = workspace_signing_key(db_url, create=False)
        if own is not None:
            known.add(fingerprint(own.public_key()))
    return known


def signature_entry(key: Ed25519PrivateKey, manifest_bytes: bytes) -> bytes:
    body = {
        "algorithm": ALGORITHM,
        "public_key": base64.b64encode(_public_raw(key.public_key())).decode("ascii"),
        "manifest_sha256": sha256_hex(manifest_bytes),
        "signature": base64.b64encode(key.sign(manifest_bytes)).decode("ascii"),
    }
    return (canonical(body) + "\n").encode("utf-8")


def check_signature(blob: bytes | None, manifest_bytes: bytes, known: Collection[str]) -> SignatureCheck:
    """Whether the manifest's exact bytes carry a valid signature, and whose."""
    if blob is None:
        return SignatureCheck("unsigned")
    try:
        body = json.loads(blob)
        if body.get("algorithm") != ALGORITHM:
            return SignatureCheck("invalid", problem=f"unknown algorithm {body.get('algorithm')!r}")
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(body["public_key"], validate=True))
        signature = base64.b64decode(body["signature"], validate=True)
    except (ValueError, TypeError, KeyError, AttributeError, binascii.Error) as exc:
        return SignatureCheck("invalid", problem=f"unreadable ({type(exc).__name__})")
    fp = fingerprint(public)
    try:
        public.verify(signature, manifest_bytes)
    except InvalidSignature:
        return SignatureCheck(
            "invalid", fp, "does not match the manifest (the bundle was changed after it was signed)"
        )
    return SignatureCheck("known" if fp in known else "unknown", fp)
