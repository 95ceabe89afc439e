"""Writing case bundles: everything an auditor needs about some tasks, in one verifiable file."""

from __future__ import annotations

import asyncio
import os
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core.bundle.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_NAME,
    SIGNATURE_NAME,
    BundleError,
    canonical,
    event_hash,
    events_entry,
    genesis_hash,
    sha256_hex,
    task_entry,
)
from core.bundle.paths import MachineScrub, machine_scrub
from core.bundle.redact import Redactor
from core.bundle.signing import fingerprint, signature_entry
from core.store import Store
from core.version import app_version

__all__ = ["ExportSummary", "export_bundle"]


@dataclass
class ExportSummary:
    path: Path
    bundle_id: str
    task_ids: list[str]
    entries: int
    events: int
    uncompressed_bytes: int
    file_bytes: int
    redactions: list[dict[str, Any]] = field(default_factory=list)
    signer: str | None = None  # the signing key's fingerprint; None: unsigned


@dataclass
class _Collected:
    """Plain JSON-ready data read from the store, before redaction."""

    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


async def _collect(store: Store, task_ids: Sequence[str]) -> _Collected:
    data = _Collected()
    for requested in task_ids:
        task = await store.get_task(requested)  # accepts a unique prefix; raises StoreError naming it
        if task.id in data.tasks:
            continue
        sessions = await store.list_sessions(task.id)
        runs = await store.list_runs(task_id=task.id)
        known = {s.id for s in sessions}
        # Runs may live in sessions not tied to the task (team nodes); their events are evidence too.
        missing = sorted({r.session_id for r in runs} - known)
        sessions.extend(await store.get_sessions(missing))
        data.tasks[task.id] = {
            "task.json": task.model_dump(mode="json"),
            "attempts.json": [a.model_dump(mode="json") for a in await store.list_attempts(task.id)],
            "sessions.json": [s.model_dump(mode="json") for s in sessions],
            "runs.json": [r.model_dump(mode="json") for r in runs],
            "validations.json": [v.model_dump(mode="json") for v in await store.list_validations(task.id)],
            "feedback.json": [f.model_dump(mode="json") for f in await store.list_feedback(task.id)],
        }
        for session in sessions:
            if session.id in data.events:
                continue
            records = await store.get_session_events(session.id)
            data.events[session.id] = [
                {k: v for k, v in r.model_dump(mode="json").items() if k != "id"} for r in records
            ]
    return data


def _build_entries(
    data: _Collected, redactor: Redactor, scrub: MachineScrub
) -> tuple[dict[str, bytes], dict[str, dict[str, Any]], int]:
    entries: dict[str, bytes] = {}
    chains: dict[str, dict[str, Any]] = {}
    total_events = 0
    for task_id, files in data.tasks.items():
        for name, obj in files.items():
            entry = task_entry(task_id, name)
            entries[entry] = (canonical(redactor.value(scrub.value(obj), entry)) + "\n").encode("utf-8")
    for session_id, events in data.events.items():
        entry = events_entry(session_id)
        prev = genesis_hash(session_id)
        lines: list[str] = []
        for event in events:
            clean = redactor.value(scrub.value(event), entry)
            digest = event_hash(prev, clean)
            lines.append(canonical({**clean, "prev_hash": prev, "hash": digest}))
            prev = digest
        entries[entry] = ("\n".join(lines) + "\n" if lines else "").encode("utf-8")
        chains[session_id] = {
            "entry": entry,
            "events": len(events),
            "first_seq": events[0]["seq"] if events else None,
            "last_seq": events[-1]["seq"] if events else None,
            "head": prev,
        }
        total_events += len(events)
    return entries, chains, total_events


def _write(
    data: _Collected,
    redactor: Redactor,
    out: Path,
    signing_key: Ed25519PrivateKey | None,
    scrub: MachineScrub,
) -> ExportSummary:
    entries, chains, total_events = _build_entries(data, redactor, scrub)
    redactions = redactor.summary()
    manifest: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "app_version": app_version(),
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "task_ids": list(data.tasks),
        "entries": {name: {"sha256": sha256_hex(b), "size": len(b)} for name, b in entries.items()},
        "chains": chains,
        "redactions": redactions,
    }
    manifest_bytes = (canonical(manifest) + "\n").encode("utf-8")
    for name, blob in [(MANIFEST_NAME, manifest_bytes), *entries.items()]:
        label = redactor.leftover(name, blob)
        if label is not None:
            raise BundleError(
                f"redaction {label} still matches in {name} after masking (the match spans JSON syntax "
                "or an identifier); nothing was written — make the pattern more specific"
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename, so a failed export never leaves a half bundle behind.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
            zf.writestr(MANIFEST_NAME, manifest_bytes)
            if signing_key is not None:
                zf.writestr(SIGNATURE_NAME, signature_entry(signing_key, manifest_bytes))
            for name, blob in entries.items():
                zf.writestr(name, blob)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ExportSummary(
        path=out,
        bundle_id=sha256_hex(manifest_bytes),
        task_ids=list(data.tasks),
        entries=len(entries) + 1,
        events=total_events,
        uncompressed_bytes=len(manifest_bytes) + sum(len(b) for b in entries.values()),
        file_bytes=out.stat().st_size,
        redactions=[{k: v for k, v in r.items() if k != "entries"} for r in redactions],
        signer=fingerprint(signing_key.public_key()) if signing_key is not None else None,
    )


async def export_bundle(
    store: Store,
    task_ids: Sequence[str],
    out: Path,
    *,
    redact: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    signing_key: Ed25519PrivateKey | None = None,
    scrub: MachineScrub | None = None,
) -> ExportSummary:
    """Export tasks with their attempts, sessions, runs, every event, validations and feedback.

    ``redact`` holds regular expressions masked everywhere; secrets found in ``environ`` (default:
    the process environment, names ending in ``_API_KEY``, ``_TOKEN``, ``_SECRET``, plus the API keys
    in the OS keyring) and every known secret shape are always masked (``core.bundle.redact``). With ``signing_key`` (the workspace's, from ``workspace_signing_key``) the
    manifest is signed. ``scrub`` rewrites machine paths and the login name (default: the home
    folder and login; ``machine_scrub(include_paths=True)`` keeps them). Raises ``BundleError`` (bad pattern, leftover match) or ``StoreError`` (unknown
    task) before anything is written.
    """
    if not task_ids:
        raise BundleError("name at least one task to export")
    redactor = await asyncio.to_thread(Redactor.build, redact, environ)  # reads the keyring
    data = await _collect(store, task_ids)
    try:
        scrub = scrub if scrub is not None else machine_scrub()
        return await asyncio.to_thread(_write, data, redactor, Path(out), signing_key, scrub)
    except OSError as exc:
        raise BundleError(f"cannot write bundle {out}: {exc.strerror or exc}") from None
