"""Reading a bundle's content members (format 2) by reference: piece by piece, or a range.

A content member is the text of one big tool result or output; it is never read whole. The
importer streams it into the workspace's chunk store and the read-only view pages it, both through
``iter_member_text``, which inflates one block at a time and decodes across block boundaries.
"""

from __future__ import annotations

import codecs
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.bundle.format import BundleError, content_member
from core.domain.content import ContentRef

__all__ = ["READ_BLOCK", "iter_member_text", "member_of", "read_member_range"]

READ_BLOCK = 1 << 20


def member_of(ref: ContentRef | dict[str, Any] | str) -> str:
    """The member holding a referenced text: members are named by the sha256 of their text."""
    if isinstance(ref, str):
        return content_member(ref)
    if isinstance(ref, dict):
        return content_member(str(ref.get("sha256")))
    return content_member(ref.sha256)


def iter_member_text(path: Path, member: str, block: int = READ_BLOCK) -> Iterator[str]:
    """The member's text in pieces of at most ``block`` bytes' worth; blocking (zip inflation)."""
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BundleError(f"cannot read {Path(path).name}: {exc}") from None
    with zf:
        try:
            fh = zf.open(member)
        except KeyError:
            raise BundleError(f"bundle {Path(path).name} lacks content member {member}") from None
        decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        with fh:
            while data := fh.read(block):
                text = decoder.decode(data)
                if text:
                    yield text
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail


def read_member_range(path: Path, member: str, offset: int, length: int) -> str:
    """Characters ``[offset, offset + length)`` of a member, inflating only up to the range's end."""
    if offset < 0 or length < 0:
        raise BundleError("a content range needs a non-negative offset and length")
    out: list[str] = []
    pos = 0
    end = offset + length
    if length == 0:
        return ""
    for piece in iter_member_text(path, member):
        if pos + len(piece) > offset:
            out.append(piece[max(0, offset - pos) : end - pos])
        pos += len(piece)
        if pos >= end:
            break
    return "".join(out)
