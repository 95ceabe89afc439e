"""Checking a bundle: every entry against the manifest, every session log against its hash chain.

Verification never stops at the first problem: an auditor needs the full list, each failure naming
the entry (and the event, for logs) at fault.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.bundle.chain import (
    CONTENT,
    ECHO,
    MAX_FAILURES_PER_ENTRY,
    STRUCTURE,
    ChainCheck,
    chain_record,
    refs_in,
)
from core.bundle.consistency import check_snapshots
from core.bundle.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_NAME,
    SIGNATURE_NAME,
    TASK_FILES,
    content_member,
    events_entry,
    is_content_member,
    task_entry,
)
from core.bundle.signing import SignatureCheck, check_signature
from core.bundle.zipread import (
    DEFAULT_LIMITS,
    ZipLimits,
    content_problem,
    read_capped,
    read_lines_capped,
    unsafe_name,
)
from core.inputs import loads_json
from core.progress import advance, expect

__all__ = ["LoadedBundle", "VerificationReport", "ZipLimits", "load_bundle", "plural", "verify_bundle"]


@dataclass
class VerificationReport:
    path: Path
    failures: list[str] = field(default_factory=list)
    entries_checked: int = 0
    events_checked: int = 0
    bundle_id: str | None = None
    signature: SignatureCheck = field(default_factory=lambda: SignatureCheck("unsigned"))
    packaging: list[str] = field(default_factory=list)
    """What re-packing changed that the manifest does not cover (directory entries, timestamps,
    member order): reported after the failures, never counted as one."""
    _ranks: list[int] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return not self.failures

    def add(self, message: str, rank: int = STRUCTURE) -> None:
        self.failures.append(message)
        self._ranks.append(rank)

    def finish(self) -> None:
        """Order failures by rank (stable), the real content change first."""
        ranks = self._ranks + [STRUCTURE] * (len(self.failures) - len(self._ranks))
        order = sorted(range(len(self.failures)), key=lambda i: ranks[i])
        self.failures = [self.failures[i] for i in order]
        self._ranks = [ranks[i] for i in order]

    def summary(self) -> str:
        signature = f"  signature: {self.signature.describe()}"
        noise = f"  packaging (not failures): {'; '.join(self.packaging)}\n" if self.packaging else ""
        if self.ok:
            return (
                f"{self.path.name}: OK ({self.entries_checked} entries, {self.events_checked} events, "
                f"bundle {self.bundle_id})\n{noise}{signature}"
            )
        return (
            f"{self.path.name}: FAILED ({plural(len(self.failures), 'problem')})\n"
            + "\n".join(f"  - {f}" for f in self.failures)
            + f"\n{noise}{signature}"
        )


def plural(n: int, noun: str) -> str:
    """ "1 problem", "2 problems": the count and the noun agree in every message."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass
class LoadedBundle:
    """Raw JSON entry bytes plus the report; what import and the read-only view build on.

    Content members (format 2) are not in ``contents``: they were hashed streaming and are read
    from ``report.path`` by reference (``content_members`` lists those that checked out).
    """

    report: VerificationReport
    manifest: dict[str, Any] | None
    contents: dict[str, bytes]
    content_members: set[str] = field(default_factory=set)


def _members(
    zf: zipfile.ZipFile, report: VerificationReport, limits: ZipLimits
) -> dict[str, zipfile.ZipInfo]:
    """The archive's file entries by name; directory entries are packaging noise and are skipped."""
    infos = zf.infolist()
    if len(infos) > limits.max_entries:
        report.add(f"{report.path.name}: holds {len(infos):,} entries, over the {limits.max_entries:,} limit")
        return {}
    members: dict[str, zipfile.ZipInfo] = {}
    folders = 0
    for info in infos:
        why = unsafe_name(info.filename)
        if why is not None:
            report.add(f"{info.filename}: unsafe name, it {why} (zip-slip); refused")
            continue
        if info.is_dir() and info.file_size == 0:
            folders += 1
            continue
        members[info.filename] = info  # the last of duplicates, as zipfile itself reads
    if folders:
        # Timestamps, extra fields and member order are never read: only names and bytes are hashed.
        report.packaging.append(f"{folders} directory {'entry' if folders == 1 else 'entries'} ignored")
    for name, n in Counter(i.filename for i in infos).items():
        if n > 1:
            report.add(f"{name}: appears {n} times in the archive (entries were added after export)")
    return members


def _read_manifest(
    zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], report: VerificationReport, limits: ZipLimits
) -> tuple[dict[str, Any], bytes] | None:
    info = members.get(MANIFEST_NAME)
    if info is None:
        report.add(f"{MANIFEST_NAME}: missing; this is not an Evidence Desk case bundle")
        return None
    read = read_capped(zf, info, limits.max_manifest_bytes)
    if read.data is None or read.sha256 is None:
        report.add(f"{MANIFEST_NAME}: {read.problem}")
        return None
    raw = read.data
    report.bundle_id = read.sha256
    try:
        manifest = loads_json(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        report.add(f"{MANIFEST_NAME}: not valid JSON ({exc})")
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        report.add(f"{MANIFEST_NAME}: not an Evidence Desk case bundle manifest")
        return None
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        report.add(
            f"{MANIFEST_NAME}: bundle format {version!r} is newer than this Evidence Desk reads "
            f"({FORMAT_VERSION}); upgrade to open it"
        )
        return None
    for key, kind in (("entries", dict), ("chains", dict), ("task_ids", list)):
        if not isinstance(manifest.get(key), kind):
            report.add(f"{MANIFEST_NAME}: '{key}' is missing or malformed")
            return None
    return manifest, raw


def _check_signature(
    zf: zipfile.ZipFile,
    members: dict[str, zipfile.ZipInfo],
    manifest_bytes: bytes,
    known: Collection[str],
    report: VerificationReport,
    limits: ZipLimits,
) -> None:
    info = members.get(SIGNATURE_NAME)
    blob = None
    if info is not None:
        read = read_capped(zf, info, limits.max_signature_bytes)
        if read.data is None:
            report.add(f"{SIGNATURE_NAME}: {read.problem}", STRUCTURE)
            report.signature = SignatureCheck("invalid", problem=read.problem)
            return
        blob = read.data
    report.signature = check_signature(blob, manifest_bytes, known)
    if report.signature.problem is not None:
        # After the content failures: an edited entry is the news, the broken signature its echo.
        report.add(f"{SIGNATURE_NAME}: signature {report.signature.problem}", STRUCTURE)


def _check_entries(
    zf: zipfile.ZipFile,
    members: dict[str, zipfile.ZipInfo],
    manifest: dict[str, Any],
    report: VerificationReport,
    limits: ZipLimits,
    checked: set[str],
    streamed: dict[str, ChainCheck],
) -> dict[str, bytes]:
    """Hash every listed entry; content members and (with ``streamed``) event logs are not kept.

    ``streamed`` maps a log's entry name to the check of its chain, fed line by line while the log
    is inflated; a log that cannot be read to its end is left out of it (its failure is reported).
    """
    listed: dict[str, Any] = manifest["entries"]
    pending = dict(streamed)
    streamed.clear()  # refilled with the logs read to their end; the others are reported
    for name in members:
        if name not in (MANIFEST_NAME, SIGNATURE_NAME) and name not in listed:
            report.add(f"{name}: in the archive but not listed in the manifest (added after export)")
    declared = sum(i.file_size for n, i in members.items() if n in listed and not is_content_member(n))
    content_total = sum(i.file_size for n, i in members.items() if n in listed and is_content_member(n))
    for total, limit in ((declared, limits.max_total_bytes), (content_total, limits.max_content_total_bytes)):
        if total > limit:
            report.add(
                f"{report.path.name}: entries declare {total:,} bytes uncompressed in total, over the "
                f"{limit:,}-byte limit; not inflated (a zip bomb or not a case bundle)"
            )
            return {}
    contents: dict[str, bytes] = {}
    expect(declared + content_total)
    for name, meta in listed.items():
        info = members.get(name)
        if info is None:
            report.add(f"manifest lists {name} but the bundle lacks it (entry removed)")
            continue
        if not isinstance(meta, dict):
            report.add(f"{MANIFEST_NAME}: record for {name} is malformed")
            continue
        if meta.get("size") != info.file_size:
            report.add(f"{name}: size {info.file_size} differs from the manifest's {meta.get('size')}", ECHO)
        content = is_content_member(name)
        problem = content_problem(info, limits) if content else None
        if problem is not None:
            report.add(f"{name}: {problem}")
            continue
        stream = pending.pop(name, None)
        if stream is not None:
            read = read_lines_capped(zf, info, limits.max_entry_bytes, stream.feed)
            if read.data is not None:
                streamed[name] = stream
        else:
            read = read_capped(
                zf, info, limits.max_content_bytes if content else limits.max_entry_bytes, keep=not content
            )
        advance(info.file_size)
        if read.data is None:
            report.add(f"{name}: {read.problem}")
            continue
        report.entries_checked += 1
        if meta.get("sha256") != read.sha256:
            report.add(f"{name}: sha256 mismatch (content changed)", CONTENT)
        elif content and name != content_member(str(read.sha256)):
            report.add(
                f"{name}: its name does not match the sha256 of its text (content member renamed)", CONTENT
            )
        elif content:
            checked.add(name)
        if not content and stream is None:
            contents[name] = read.data
    for task_id in manifest["task_ids"]:
        for file in TASK_FILES:
            if task_entry(str(task_id), file) not in listed:
                report.add(f"manifest lists task {task_id} but has no {task_entry(str(task_id), file)}")
    return contents


def _check_chain(
    session_id: str,
    chain: Any,
    contents: dict[str, bytes],
    report: VerificationReport,
    streamed: dict[str, ChainCheck],
) -> None:
    entry = events_entry(session_id)
    record = chain_record(session_id, chain)
    if record is None:
        report.add(f"{MANIFEST_NAME}: chain record for session {session_id} is malformed")
        return
    check = streamed.get(entry)
    if check is None:
        blob = contents.get(entry)
        if blob is None:
            return  # already reported as missing or unreadable
        check = ChainCheck(session_id, record)
        lines = blob.split(b"\n")
        for line in lines[:-1] if lines[-1] == b"" else lines:
            check.feed(line)
    check.finish(report)


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
            report.add(f"{entry}: malformed ({exc})")
            continue
        for sid in ids:
            if sid not in chains:
                report.add(f"{entry} lists session {sid} but the manifest has no event chain for it")


def _check_references(
    manifest: dict[str, Any],
    contents: dict[str, bytes],
    members: dict[str, zipfile.ZipInfo],
    checked: set[str],
    report: VerificationReport,
    streamed: dict[str, ChainCheck],
) -> None:
    """Every content reference in a JSON entry names a present member whose hash is its own."""
    listed: dict[str, Any] = manifest["entries"]
    sources: list[tuple[str, bytes | None]] = [*contents.items(), *((n, None) for n in streamed)]
    for name, blob in sources:
        refs: list[dict[str, Any]] = list(streamed[name].refs) if blob is None else []
        lines = [] if blob is None else blob.split(b"\n") if name.endswith(".jsonl") else [blob]
        for line in lines:
            if b'"member"' not in line:
                continue
            try:
                refs_in(loads_json(line), refs)
            except (ValueError, UnicodeDecodeError):
                continue  # reported by the structural checks
        problems = 0
        for ref in refs:
            member, sha = ref["member"], ref["sha256"]
            why = None
            if member != content_member(str(sha)):
                why = f"a reference names {member} for text {str(sha)[:12]} (reference changed)"
            elif member not in listed or member not in members:
                why = f"a reference names {member}, which the bundle lacks (content member removed)"
            elif member not in checked:
                continue  # its own failure (hash, size, limits) is already reported
            if why is not None:
                problems += 1
                if problems <= MAX_FAILURES_PER_ENTRY:
                    report.add(f"{name}: {why}", CONTENT)


def load_bundle(
    path: Path,
    *,
    known_keys: Collection[str] = (),
    limits: ZipLimits = DEFAULT_LIMITS,
    keep_logs: bool = True,
) -> LoadedBundle:
    """Read and verify; blocking (zip inflation and hashing), so async callers use ``asyncio.to_thread``.

    ``known_keys`` are the signer fingerprints the reader trusts (its workspace's own and its
    trusted list); an unknown signer is reported, not a failure: import decides what to do with it.
    ``keep_logs=False`` (``verify_bundle``) checks each event log line by line as it is inflated and
    keeps none of it: memory is then bounded by the longest line, not by the log.
    """
    path = Path(path)
    report = VerificationReport(path=path)
    if not path.is_file():
        report.add(f"{path}: no such file")
        return LoadedBundle(report, None, {})
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, ValueError) as exc:
        report.add(f"{path.name}: not a readable zip archive ({exc}); truncated or not a case bundle")
        return LoadedBundle(report, None, {})
    with zf:
        members = _members(zf, report, limits)
        read = _read_manifest(zf, members, report, limits) if members else None
        if read is None:
            if not members and not report.failures:
                report.add(f"{MANIFEST_NAME}: missing; this is not an Evidence Desk case bundle")
            report.finish()
            return LoadedBundle(report, None, {})
        manifest, manifest_bytes = read
        _check_signature(zf, members, manifest_bytes, known_keys, report, limits)
        checked: set[str] = set()
        streamed: dict[str, ChainCheck] = {}
        if not keep_logs:
            for session_id, chain in manifest["chains"].items():
                record = chain_record(str(session_id), chain)
                if record is not None:
                    streamed[events_entry(str(session_id))] = ChainCheck(str(session_id), record)
        contents = _check_entries(zf, members, manifest, report, limits, checked, streamed)
    for session_id, chain in manifest["chains"].items():
        _check_chain(str(session_id), chain, contents, report, streamed)
    _check_sessions_listed(manifest, contents, report)
    _check_references(manifest, contents, members, checked, report, streamed)
    kept = {c.session_id: c.kept for c in streamed.values()}
    check_snapshots(manifest, contents, report, kept)
    report.finish()
    return LoadedBundle(report, manifest, contents, checked)


def verify_bundle(
    path: Path, *, known_keys: Collection[str] = (), limits: ZipLimits = DEFAULT_LIMITS
) -> VerificationReport:
    """Check every hash, chain, snapshot and the signature; blocking, so async callers use a thread.

    Streams: content members and event logs are hashed and checked as they are inflated, never kept.
    """
    return load_bundle(path, known_keys=known_keys, limits=limits, keep_logs=False).report
