"""The case bundle format, shared by export, verification, import and the desk's read-only view.

A bundle is a zip file. ``manifest.json`` lists every other entry with its SHA-256 and size, and
each session's event log is a hash chain (every line's ``hash`` covers the previous line's hash),
so a changed, deleted or reordered event breaks the chain even if someone also rewrote the
manifest's entry hashes. The manifest's own SHA-256 is the bundle id: import records it as the
``origin`` of the tasks it adds.

Format 2 carries each big text (one the store holds as chunks) as its own member,
``content/<sha256>.txt``, named by the SHA-256 of its redacted UTF-8 bytes and written streaming.
The JSON entries hold a reference in the store's shape (``sha256``, ``length``, ``n_bytes``,
``chunks``) plus ``member``; the chain hashes the reference and the manifest lists the member with
its hash and size, so the signature covers the text transitively. Format 1 bundles (texts inline)
are still read everywhere.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core.errors import EvidenceDeskError

FORMAT_NAME = "evidence-desk-case-bundle"
FORMAT_VERSION = 2
CONTENT_PREFIX = "content/"
CONTENT_SUFFIX = ".txt"
MANIFEST_NAME = "manifest.json"
# Signs the manifest's bytes, so it cannot be listed in the manifest; the one unlisted entry allowed.
SIGNATURE_NAME = "signature.json"

# Fields of an event that the chain covers. The database id is deliberately absent: it is local to a
# workspace, and an imported event must re-export to the very same bytes.
EVENT_FIELDS = ("session_id", "run_id", "task_id", "seq", "kind", "payload", "content", "created_at")


class BundleError(EvidenceDeskError):
    """A bundle cannot be written, read or imported; the message names the entry at fault."""


def canonical(obj: Any) -> str:
    """One spelling per value, so a hash computed at export can be recomputed anywhere."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def genesis_hash(session_id: str) -> str:
    """The chain of each session starts from its own id, so events cannot be moved between sessions."""
    return sha256_hex(f"evidence-desk-chain:{session_id}".encode())


def event_hash(prev_hash: str, event: dict[str, Any]) -> str:
    body = {k: event.get(k) for k in EVENT_FIELDS}
    return sha256_hex((prev_hash + canonical(body)).encode("utf-8"))


def jsonl_lines(text: str) -> list[str]:
    """The lines of an events log, split on ``\n`` only.

    ``str.splitlines`` also splits on U+2028, U+2029 and U+0085, which canonical JSON writes raw
    inside strings (``ensure_ascii=False``): a tool result holding one would read as broken lines.
    """
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def task_entry(task_id: str, name: str) -> str:
    return f"tasks/{task_id}/{name}"


def events_entry(session_id: str) -> str:
    return f"sessions/{session_id}/events.jsonl"


TASK_FILES = ("task.json", "attempts.json", "sessions.json", "runs.json", "validations.json", "feedback.json")


def content_member(sha256: str) -> str:
    return f"{CONTENT_PREFIX}{sha256}{CONTENT_SUFFIX}"


def is_content_member(name: str) -> bool:
    return name.startswith(CONTENT_PREFIX)


def bundle_ref_of(value: object) -> dict[str, Any] | None:
    """``value`` as a format-2 content reference (a dict naming its member), or None."""
    if not isinstance(value, dict):
        return None
    sha, member = value.get("sha256"), value.get("member")
    if isinstance(sha, str) and isinstance(member, str) and is_content_member(member):
        return value
    return None
