"""Writing case bundles: everything an auditor needs about some tasks, in one verifiable file.

Export streams (format 2): rows are read without resolving their big texts, each big text is read
from the store one chunk at a time, masked with an overlap window and written as its own content
member, and the JSON entries carry references to those members. Memory is bounded by a chunk, not
by the task, so a gigabyte of tool results exports on a laptop.
"""

from __future__ import annotations

import asyncio
import os
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
    events_entry,
    sha256_hex,
    task_entry,
)
from core.bundle.paths import MachineScrub, machine_scrub
from core.bundle.redact import Redactor
from core.bundle.signing import fingerprint, signature_entry
from core.bundle.stream import LeftoverScan
from core.bundle.verify import verify_bundle
from core.bundle.writer import BundleWriter
from core.domain.content import OFFLOADED_KEYS, REF_SUFFIX, ContentRef
from core.leftovers import new_part_file
from core.progress import advance
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
    """Plain JSON-ready data read from the store, big texts still as store references."""

    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _store_ref(key: str, value: Any) -> str | None:
    """The sha256 of a store reference under ``key`` (``content_ref``, ``output_text_ref``)."""
    if not key.endswith(REF_SUFFIX) or key[: -len(REF_SUFFIX)] not in OFFLOADED_KEYS:
        return None
    if not isinstance(value, dict) or "member" in value:
        return None
    sha = value.get("sha256")
    return sha if isinstance(sha, str) and len(sha) == 64 else None


def _refs(value: Any, found: dict[str, dict[str, Any]]) -> None:
    if isinstance(value, list):
        for v in value:
            _refs(v, found)
    elif isinstance(value, dict):
        for key, v in value.items():
            sha = _store_ref(key, v)
            if sha is not None:
                found.setdefault(sha, v)
            else:
                _refs(v, found)


def _swap(value: Any, members: Mapping[str, dict[str, Any]]) -> Any:
    """A copy of ``value`` whose store references point at the bundle's content members instead."""
    if isinstance(value, list):
        return [_swap(v, members) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        sha = _store_ref(key, v)
        out[key] = dict(members[sha]) if sha is not None and sha in members else _swap(v, members)
    return out


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
        attempts = await store.list_attempts(task.id, resolve=False)
        data.tasks[task.id] = {
            "task.json": task.model_dump(mode="json"),
            "attempts.json": [a.model_dump(mode="json") for a in attempts],
            "sessions.json": [s.model_dump(mode="json") for s in sessions],
            "runs.json": [r.model_dump(mode="json") for r in runs],
            "validations.json": [v.model_dump(mode="json") for v in await store.list_validations(task.id)],
            "feedback.json": [f.model_dump(mode="json") for f in await store.list_feedback(task.id)],
        }
        for session in sessions:
            if session.id in data.events:
                continue
            records = await store.get_session_events(session.id, resolve=False)
            data.events[session.id] = [
                {k: v for k, v in r.model_dump(mode="json").items() if k != "id"} for r in records
            ]
    return data


async def _write_contents(store: Store, data: _Collected, writer: BundleWriter) -> dict[str, dict[str, Any]]:
    """Every big text once, chunk by chunk from the store into its member; store sha -> bundle ref."""
    found: dict[str, dict[str, Any]] = {}
    for files in data.tasks.values():
        _refs(files, found)
    for events in data.events.values():
        _refs(events, found)
    members: dict[str, dict[str, Any]] = {}
    for sha, raw in found.items():
        sink = writer.content()
        try:
            async for piece in store.iter_content(ContentRef.model_validate(raw)):
                await asyncio.to_thread(sink.feed, piece)
                advance(len(piece))
        except BaseException:
            sink.abort()
            raise
        members[sha] = await asyncio.to_thread(sink.finish)
    return members


def _write_entries(
    data: _Collected, writer: BundleWriter, members: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], int]:
    for task_id, files in data.tasks.items():
        for name, obj in files.items():
            writer.json_entry(task_entry(task_id, name), _swap(obj, members))
            advance(int(writer.entries[task_entry(task_id, name)]["size"]))
    chains: dict[str, dict[str, Any]] = {}
    total = 0
    for session_id, events in data.events.items():
        chain = writer.events_entry(session_id, events_entry(session_id), (_swap(e, members) for e in events))
        chains[session_id] = chain
        advance(int(writer.entries[events_entry(session_id)]["size"]))
        total += chain["events"]
    return chains, total


def _finish(
    zf: zipfile.ZipFile,
    writer: BundleWriter,
    data: _Collected,
    chains: dict[str, dict[str, Any]],
    signing_key: Ed25519PrivateKey | None,
) -> bytes:
    manifest: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "app_version": app_version(),
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "task_ids": list(data.tasks),
        "entries": dict(sorted(writer.entries.items())),
        "chains": chains,
        "redactions": writer.redactor.summary(),
    }
    manifest_bytes = (canonical(manifest) + "\n").encode("utf-8")
    check = LeftoverScan(writer.redactor, MANIFEST_NAME)
    check.feed(manifest_bytes.decode("utf-8"))
    found = check.flush()
    if found is not None:
        raise BundleError(
            f"redaction {found} still matches in {MANIFEST_NAME} after masking (the match spans "
            "JSON syntax or an identifier); nothing was written — make the pattern more specific"
        )
    zf.writestr(MANIFEST_NAME, manifest_bytes)
    if signing_key is not None:
        zf.writestr(SIGNATURE_NAME, signature_entry(signing_key, manifest_bytes))
    return manifest_bytes


def _part_file(out: Path) -> Path:
    """Write beside the target and rename, so a failed export never leaves a half bundle behind."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return new_part_file(out)


def _verify_own(tmp: Path, out: Path) -> None:
    """The bundle passes ``verify`` before it takes its name: what the workspace exports, any
    workspace (its own included) can verify and import, by construction rather than by hope."""
    report = verify_bundle(tmp)
    if not report.ok:
        raise BundleError(
            f"the export to {out.name} failed its own verification ({'; '.join(report.failures[:3])}); "
            "nothing was written"
        )


def _publish(tmp: Path, out: Path) -> int:
    os.replace(tmp, out)
    return out.stat().st_size


async def _export(
    store: Store,
    data: _Collected,
    redactor: Redactor,
    out: Path,
    signing_key: Ed25519PrivateKey | None,
    scrub: MachineScrub,
) -> ExportSummary:
    tmp = await asyncio.to_thread(_part_file, out)
    try:
        zf = await asyncio.to_thread(zipfile.ZipFile, tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=6)
        with zf:
            writer = BundleWriter(zf, redactor, scrub, spool_dir=str(out.parent))
            members = await _write_contents(store, data, writer)
            chains, total_events = await asyncio.to_thread(_write_entries, data, writer, members)
            manifest_bytes = await asyncio.to_thread(_finish, zf, writer, data, chains, signing_key)
        await asyncio.to_thread(_verify_own, tmp, out)
        file_bytes = await asyncio.to_thread(_publish, tmp, out)
    except BaseException:
        await asyncio.to_thread(tmp.unlink, missing_ok=True)
        raise
    redactions = redactor.summary()
    return ExportSummary(
        path=out,
        bundle_id=sha256_hex(manifest_bytes),
        task_ids=list(data.tasks),
        entries=len(writer.entries) + 1,
        events=total_events,
        uncompressed_bytes=len(manifest_bytes) + sum(int(e["size"]) for e in writer.entries.values()),
        file_bytes=file_bytes,
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
    task) and leaves no file behind.
    """
    if not task_ids:
        raise BundleError("name at least one task to export")
    redactor = await asyncio.to_thread(Redactor.build, redact, environ)  # reads the keyring
    data = await _collect(store, task_ids)
    try:
        scrub = scrub if scrub is not None else machine_scrub()
        return await _export(store, data, redactor, Path(out), signing_key, scrub)
    except OSError as exc:
        raise BundleError(f"cannot write bundle {out}: {exc.strerror or exc}") from None
