"""The case bundle format, shared by export, verification, import and the desk's read-only view.

A bundle is a zip file. ``manifest.json`` lists every other entry with its SHA-256 and size, and
each session's event log is a hash chain (every line's ``hash`` covers the previous line's hash),
so a changed, deleted or reordered event breaks the chain even if someone also rewrote the
manifest's entry hashes. The manifest's own SHA-256 is the bundle id: import records it as the
``origin`` of the tasks it adds.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core.errors import EvidenceDeskError

FORMAT_NAME = "evidence-desk-case-bundle"
FORMAT_VERSION = 1
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


def task_entry(task_id: str, name: str) -> str:
    return f"tasks/{task_id}/{name}"


def events_entry(session_id: str) -> str:
    return f"sessions/{session_id}/events.jsonl"


TASK_FILES = ("task.json", "attempts.json", "sessions.json", "runs.json", "validations.json", "feedback.json")
