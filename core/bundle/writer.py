"""The zip side of an export: every member written streaming, hashed and leftover-checked as it goes.

A content member's name is the hash of its redacted text, known only at its end, so the masked text
is spooled to a temporary file (hashed on the way) and then copied into the zip under its name. A
JSON entry is written value by value (an events log event by event), its hash computed while
writing. Nothing here holds more than one piece of text: memory is bounded by a chunk, not a task.
"""

from __future__ import annotations

import hashlib
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from core.bundle.format import BundleError, canonical, content_member, event_hash, genesis_hash
from core.bundle.paths import MachineScrub
from core.bundle.redact import Redactor
from core.bundle.stream import LeftoverScan, StreamMasker

__all__ = ["BundleWriter", "ContentSink"]

COPY_BLOCK = 1 << 20


def _refused(label: str, name: str) -> BundleError:
    return BundleError(
        f"redaction {label} still matches in {name} after masking (the match spans JSON syntax "
        "or an identifier); nothing was written — make the pattern more specific"
    )


class _Member:
    """One zip member open for writing, hashing and checking what goes through it."""

    def __init__(self, writer: BundleWriter, name: str, *, zip64: bool) -> None:
        self.name = name
        self.digest = hashlib.sha256()
        self.size = 0
        self.leftover = LeftoverScan(writer.redactor, name)
        self._fh = writer.zf.open(name, "w", force_zip64=zip64)
        self._writer = writer

    def write(self, text: str) -> None:
        self.leftover.feed(text)
        data = text.encode("utf-8", "surrogatepass")
        self.digest.update(data)
        self.size += len(data)
        self._fh.write(data)

    def close(self) -> None:
        self._fh.close()
        found = self.leftover.flush()
        if found is not None:
            raise _refused(found, self.name)
        self._writer.entries[self.name] = {"sha256": self.digest.hexdigest(), "size": self.size}


@dataclass
class ContentSink:
    """One big text on its way into the bundle: masked piece by piece, spooled, then stored."""

    writer: BundleWriter
    pieces: int = 0
    _masker: StreamMasker | None = None
    _spool: IO[bytes] | None = None
    _digest: Any = field(default_factory=hashlib.sha256)
    _chars: int = 0
    _bytes: int = 0
    _leftover: LeftoverScan | None = None

    def __post_init__(self) -> None:
        w = self.writer
        self._masker = StreamMasker(w.redactor, "content", w.scrub)
        self._leftover = LeftoverScan(w.redactor, "content")
        # Closed by ``finish`` (its ``finally``) or ``abort``.
        self._spool = tempfile.TemporaryFile(dir=w.spool_dir)  # noqa: SIM115

    # Nothing came before the first round: its text, if the masker left it unchanged, was scanned
    # whole by every rule already (a match reaching past the hold moves the hold back), so only a
    # change, this round or the one before, makes the leftover scan worth its pass.
    _changed_before: bool = False

    def _emit(self, text: str) -> None:
        assert self._spool is not None and self._leftover is not None and self._masker is not None
        # Text the masker left unchanged, this round and the one before, was already scanned by
        # every rule with its overlap: re-scanning it could find nothing. Masked text is re-scanned.
        changed = self._masker.changed or self._changed_before
        self._changed_before = self._masker.changed
        if not text:
            return
        self._leftover.feed(text, scan=changed)
        data = text.encode("utf-8", "surrogatepass")
        self._digest.update(data)
        self._chars += len(text)
        self._bytes += len(data)
        self._spool.write(data)

    def feed(self, piece: str) -> None:
        assert self._masker is not None
        self.pieces += 1
        self._emit(self._masker.feed(piece))

    def abort(self) -> None:
        """The text could not be read to its end (the export fails): drop the spooled part."""
        if self._spool is not None:
            self._spool.close()

    def finish(self) -> dict[str, Any]:
        """The member's reference; the member is written unless the same text already was."""
        assert self._masker is not None and self._spool is not None and self._leftover is not None
        try:
            self._emit(self._masker.close())
            sha = self._digest.hexdigest()
            name = content_member(sha)
            found = self._leftover.flush() or self.writer.redactor.leftover(name, "")
            if found is not None:
                raise _refused(found, name)
            if name not in self.writer.entries:
                self._spool.seek(0)
                with self.writer.zf.open(name, "w", force_zip64=True) as fh:
                    while block := self._spool.read(COPY_BLOCK):
                        fh.write(block)
                self.writer.entries[name] = {"sha256": sha, "size": self._bytes}
            # Masking happened under the member's name: count it there, as the summary names entries.
            for rule, _regex, _needle in self.writer.redactor.scans():
                if "content" in rule.entries:
                    rule.entries.discard("content")
                    rule.entries.add(name)
        finally:
            self._spool.close()
        return {
            "sha256": sha,
            "length": self._chars,
            "n_bytes": self._bytes,
            "chunks": self.pieces,
            "member": name,
        }


@dataclass
class BundleWriter:
    """Writes members into an open zip and remembers each one's hash and size for the manifest."""

    zf: zipfile.ZipFile
    redactor: Redactor
    scrub: MachineScrub
    spool_dir: str | None = None
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def content(self) -> ContentSink:
        return ContentSink(self)

    def _clean(self, value: Any, entry: str) -> Any:
        return self.redactor.value(self.scrub.value(value), entry)

    def json_entry(self, name: str, obj: Any) -> None:
        """``canonical(obj) + "\\n"``, written one list item at a time (the same bytes)."""
        member = _Member(self, name, zip64=False)
        try:
            if isinstance(obj, list):
                member.write("[")
                for i, item in enumerate(obj):
                    member.write(("," if i else "") + canonical(self._clean(item, name)))
                member.write("]\n")
            else:
                member.write(canonical(self._clean(obj, name)) + "\n")
        finally:
            member.close()

    def events_entry(self, session_id: str, name: str, events: Iterable[dict[str, Any]]) -> dict[str, Any]:
        """The session's hash-chained log, line by line; returns its chain record for the manifest."""
        prev = genesis_hash(session_id)
        count = 0
        first_seq = last_seq = None
        member = _Member(self, name, zip64=True)
        try:
            for event in events:
                clean = self._clean(event, name)
                digest = event_hash(prev, clean)
                member.write(canonical({**clean, "prev_hash": prev, "hash": digest}) + "\n")
                prev = digest
                first_seq = event["seq"] if count == 0 else first_seq
                last_seq = event["seq"]
                count += 1
        finally:
            member.close()
        return {"entry": name, "events": count, "first_seq": first_seq, "last_seq": last_seq, "head": prev}
