"""Reading bundle entries as untrusted input: sizes checked from the headers, inflation capped.

A zip's central directory says how large each entry is before anything is inflated, so a bomb (a
small file declaring or expanding to gigabytes) is refused from its header, and every entry is
inflated in chunks, hashed as it is read, and cut off once it passes its declared size: memory stays
bounded by the limits below whatever the archive claims. Names that could escape a folder on
extraction (zip-slip) are refused, since people do unpack bundles by hand.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "EntryRead",
    "MiB",
    "ZipLimits",
    "content_problem",
    "read_capped",
    "read_lines_capped",
    "unsafe_name",
]

MiB = 1024 * 1024
CHUNK = MiB


@dataclass(frozen=True)
class ZipLimits:
    """Generous for real cases (a 50 MB evidence export is ordinary), far below what hurts a laptop."""

    max_entry_bytes: int = 512 * MiB
    max_total_bytes: int = 1024 * MiB
    max_manifest_bytes: int = 64 * MiB
    max_signature_bytes: int = 64 * 1024
    max_entries: int = 200_000
    # Content members (format 2) stream through a hash and never sit in memory, so they may be far
    # bigger than a JSON entry. What bounds a bomb is the declared size: each member is refused when
    # it declares more than its cap, all of them when their sum passes the total, and inflation stops
    # at the declared size. A compression ratio is no test: an honest answer of one repeated letter
    # deflates past 1000:1, and the workspace's own export was once refused by its own verify.
    max_content_bytes: int = 4 * 1024 * MiB
    max_content_total_bytes: int = 16 * 1024 * MiB


DEFAULT_LIMITS = ZipLimits()


@dataclass
class EntryRead:
    data: bytes | None
    sha256: str | None
    problem: str | None = None


_DRIVE = re.compile(r"^[A-Za-z]:")


def unsafe_name(name: str) -> str | None:
    """Why ``name`` could land outside the folder it is extracted to, or ``None`` if it cannot."""
    if "\\" in name:
        return "contains a backslash"
    if name.startswith("/") or _DRIVE.match(name):
        return "is an absolute path"
    if "\x00" in name:
        return "contains a NUL byte"
    if any(part == ".." for part in name.split("/")):
        return "climbs out of the bundle with '..'"
    return None


def read_capped(
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    limit: int,
    *,
    keep: bool = True,
    on_chunk: Callable[[bytes], None] | None = None,
) -> EntryRead:
    """Inflate one entry chunk by chunk, never past ``limit`` nor past the size its header declares.

    ``keep=False`` only hashes (a content member): ``data`` is then ``b""`` and memory one chunk.
    ``on_chunk`` sees each inflated chunk once it is within the declared size.
    """
    declared = info.file_size
    if declared > limit:
        return EntryRead(
            None,
            None,
            f"declares {declared:,} bytes uncompressed, over the {limit:,}-byte limit for one entry; "
            "not inflated (a zip bomb or not a case bundle)",
        )
    digest = hashlib.sha256()
    buf = bytearray()
    seen = 0
    try:
        with zf.open(info) as fh:
            while True:
                chunk = fh.read(min(CHUNK, declared + 1 - seen))
                if not chunk:
                    break
                seen += len(chunk)
                if keep:
                    buf += chunk
                digest.update(chunk)
                if seen > declared:
                    return EntryRead(
                        None, None, f"inflates past the {declared:,} bytes its header declares; stopped"
                    )
                if on_chunk is not None:
                    on_chunk(chunk)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib.error, NotImplementedError) as exc:
        return EntryRead(None, None, f"cannot be read ({exc}); the archive is corrupt or truncated")
    return EntryRead(bytes(buf), digest.hexdigest())


def content_problem(info: zipfile.ZipInfo, limits: ZipLimits) -> str | None:
    """Why a content member is refused from its header alone (its declared size), or None."""
    if info.file_size > limits.max_content_bytes:
        return (
            f"declares {info.file_size:,} bytes uncompressed, over the {limits.max_content_bytes:,}-byte "
            "limit for one content member; not inflated (a zip bomb or not a case bundle)"
        )
    return None


def read_lines_capped(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, on_line: Callable[[bytes], None]
) -> EntryRead:
    """``read_capped`` for a JSON-lines entry: each line (without its ``\\n``) goes to ``on_line``
    as soon as it is inflated; nothing else is kept (``data`` is ``b""`` on success)."""
    partial = b""

    def split(chunk: bytes) -> None:
        nonlocal partial
        lines = (partial + chunk).split(b"\n")
        partial = lines.pop()
        for line in lines:
            on_line(line)

    read = read_capped(zf, info, limit, keep=False, on_chunk=split)
    if read.data is not None and partial:
        on_line(partial)
    return read
