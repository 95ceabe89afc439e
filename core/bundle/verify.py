"""Checking a bundle: every entry against the manifest, every session log against its hash chain.

Verification never stops at the first problem: an auditor needs the full list, each failure naming
the entry (and the event, for logs) at fault.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.bundle.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_NAME,
    TASK_FILES,
    event_hash,
    events_entry,
    genesis_hash,
    sha256_hex,
    task_entry,
)
from core.inputs import loads_json

__all__ = ["LoadedBundle", "VerificationReport", "load_bundle", "verify_bundle"]

MAX_FAILURES_PER_ENTRY = 20


@dataclass
class VerificationReport:
    path: Path
    failures: list[str] = field(default_factory=list)
    entries_checked: int = 0
    events_checked: int = 0
    bundle_id: str | None = None

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        if self.ok:
            return (
                f"{self.path.name}: OK ({self.entries_checked} entries, {self.events_checked} events, "
                f"bundle {self.bundle_id})"
            )
        return f"{self.path.name}: FAILED ({len(self.failures)} problems)\n" + "\n".join(
            f"  - {f}" for f in self.failures
        )


@dataclass
class LoadedBundle:
    """Raw entry bytes plus the report; what import and the read-only view build on."""

    report: VerificationReport
    manifest: dict[str, Any] | None
    contents: dict[str, bytes]


def _read_manifest(zf: zipfile.ZipFile, report: VerificationReport) -> dict[str, Any] | None:
    try:
        raw = zf.read(MANIFEST_NAME)
    except KeyError:
        report.failures.append(f"{MANIFEST_NAME}: missing; this is not an Evidence Desk case bundle")
        return None
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        report.failures.append(f"{MANIFEST_NAME}: cannot be read ({exc}); the archive is corrupt")
        return None
    report.bundle_id = sha256_hex(raw)
    try:
        manifest = loads_json(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        report.failures.append(f"{MANIFEST_NAME}: not valid JSON ({exc})")
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        report.failures.append(f"{MANIFEST_NAME}: not an Evidence Desk case bundle manifest")
        return None
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        report.failures.append(
            f"{MANIFEST_NAME}: bundle format {version!r} is newer than this Evidence Desk reads "
            f"({FORMAT_VERSION}); upgrade to open it"
        )
        return None
    for key, kind in (("entries", dict), ("chains", dict), ("task_ids", list)):
        if not isinstance(manifest.get(key), kind):
            report.failures.append(f"{MANIFEST_NAME}: '{key}' is missing or malformed")
            return None
    return manifest


def _check_entries(
    zf: zipfile.ZipFile, manifest: dict[str, Any], report: VerificationReport
) -> dict[str, bytes]:
    names = zf.namelist()
    for name, n in Counter(names).items():
        if n > 1:
            report.failures.append(
                f"{name}: appears {n} times in the archive (entries were added after export)"
            )
    listed: dict[str, Any] = manifest["entries"]
    for name in names:
        if name != MANIFEST_NAME and name not in listed:
            report.failures.append(
                f"{name}: in the archive but not listed in the manifest (added after export)"
            )
    contents: dict[str, bytes] = {}
    present = set(names)
    for name, meta in listed.items():
        if name not in present:
            report.failures.append(f"manifest lists {name} but the bundle lacks it (entry removed)")
            continue
        try:
            blob = zf.read(name)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib.error) as exc:
            report.failures.append(f"{name}: cannot be read ({exc}); the archive is corrupt or truncated")
            continue
        report.entries_checked += 1
        contents[name] = blob
        if not isinstance(meta, dict):
            report.failures.append(f"{MANIFEST_NAME}: record for {name} is malformed")
            continue
        if meta.get("size") != len(blob):
            report.failures.append(f"{name}: size {len(blob)} differs from the manifest's {meta.get('size')}")
        if meta.get("sha256") != sha256_hex(blob):
            report.failures.append(f"{name}: sha256 mismatch (content changed)")
    for task_id in manifest["task_ids"]:
        for file in TASK_FILES:
            if task_entry(str(task_id), file) not in listed:
                report.failures.append(
                    f"manifest lists task {task_id} but has no {task_entry(str(task_id), file)}"
                )
    return contents


def _check_chain(session_id: str, chain: Any, contents: dict[str, bytes], report: VerificationReport) -> None:
    entry = events_entry(session_id)
    if not isinstance(chain, dict) or chain.get("entry") != entry:
        report.failures.append(f"{MANIFEST_NAME}: chain record for session {session_id} is malformed")
        return
    blob = contents.get(entry)
    if blob is None:
        return  # already reported as missing or unreadable
    problems: list[str] = []
    prev = genesis_hash(session_id)
    expected_seq = chain.get("first_seq")
    count = 0
    last_seq = None
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.failures.append(f"{entry}: not UTF-8 ({exc})")
        return
    for lineno, line in enumerate(text.splitlines(), start=1):
        try:
            event = loads_json(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {lineno} is not valid JSON ({exc.msg})")
            continue
        if not isinstance(event, dict):
            problems.append(f"line {lineno} is not an event object")
            continue
        count += 1
        report.events_checked += 1
        seq = event.get("seq")
        where = f"event seq {seq}"
        if event.get("session_id") != session_id:
            problems.append(f"{where} (line {lineno}) belongs to session {event.get('session_id')!r}")
        if isinstance(seq, int) and isinstance(expected_seq, int):
            if seq > expected_seq:
                gap = f"{expected_seq}" if seq == expected_seq + 1 else f"{expected_seq}-{seq - 1}"
                problems.append(f"event seq {gap} missing before line {lineno} (deleted)")
            elif seq < expected_seq:
                problems.append(f"{where} at line {lineno} is out of order (reordered or duplicated)")
        else:
            problems.append(f"line {lineno} has no valid seq")
        if event.get("prev_hash") != prev:
            problems.append(
                f"{where} (line {lineno}): chain broken, prev_hash does not match the event before it "
                "(deleted, inserted or reordered)"
            )
        recorded = event.get("hash")
        if recorded != event_hash(str(event.get("prev_hash")), event):
            problems.append(f"{where} (line {lineno}): hash mismatch (event changed)")
        # Continue from the recorded hash so one changed event is reported once, not for every later line.
        prev = recorded if isinstance(recorded, str) else prev
        if isinstance(seq, int):
            expected_seq = seq + 1
            last_seq = seq
    if count != chain.get("events"):
        problems.append(f"holds {count} events, the manifest says {chain.get('events')}")
    if prev != chain.get("head"):
        problems.append("chain head does not match the manifest (events removed, added or changed)")
    if count and last_seq != chain.get("last_seq"):
        problems.append(f"last event seq {last_seq} differs from the manifest's {chain.get('last_seq')}")
    shown = problems[:MAX_FAILURES_PER_ENTRY]
    report.failures.extend(f"{entry}: {p}" for p in shown)
    if len(problems) > len(shown):
        report.failures.append(f"{entry}: ... and {len(problems) - len(shown)} more problems")


def _check_sessions_listed(
    manifest: dict[str, Any], contents: dict[str, bytes], report: VerificationReport
) -> None:
    chains = manifest["chains"]
    for task_id in manifest["task_ids"]:
        entry = task_entry(str(task_id), "sessions.json")
        blob = contents.get(entry)
        if blob is None:
            continue
        try:
            sessions = loads_json(blob)
            ids = [s["id"] for s in sessions]
        except (ValueError, TypeError, KeyError) as exc:
            report.failures.append(f"{entry}: malformed ({exc})")
            continue
        for sid in ids:
            if sid not in chains:
                report.failures.append(
                    f"{entry} lists session {sid} but the manifest has no event chain for it"
                )


def load_bundle(path: Path) -> LoadedBundle:
    """Read and verify; blocking (zip inflation and hashing), so async callers use ``asyncio.to_thread``."""
    path = Path(path)
    report = VerificationReport(path=path)
    if not path.is_file():
        report.failures.append(f"{path}: no such file")
        return LoadedBundle(report, None, {})
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        report.failures.append(
            f"{path.name}: not a readable zip archive ({exc}); truncated or not a case bundle"
        )
        return LoadedBundle(report, None, {})
    with zf:
        manifest = _read_manifest(zf, report)
        if manifest is None:
            return LoadedBundle(report, None, {})
        contents = _check_entries(zf, manifest, report)
    for session_id, chain in manifest["chains"].items():
        _check_chain(str(session_id), chain, contents, report)
    _check_sessions_listed(manifest, contents, report)
    return LoadedBundle(report, manifest, contents)


def verify_bundle(path: Path) -> VerificationReport:
    """Check every hash and chain; blocking, so async callers use ``asyncio.to_thread``."""
    return load_bundle(path).report
