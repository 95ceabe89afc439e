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

__all__ = ["READ_BLOCK", "MemberCursor", "iter_member_text", "member_of"]

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


class MemberCursor:
    """Sequential range reads of one member without inflating it from the start each time.

    A viewer pages forward: each read continues from where the last one stopped, holding one
    inflated piece. A read before the current position starts over (a zip stream cannot go back).
    Not thread-safe: the owner serialises reads (``OpenedBundle`` holds a lock per member).
    """

    def __init__(self, path: Path, member: str, block: int = READ_BLOCK) -> None:
        self.path = Path(path)
        self.member = member
        self.block = block
        self.restarts = 0
        self._pieces: Iterator[str] | None = None
        self._start = 0  # character offset of ``_piece`` in the member
        self._piece = ""
        self._prev = ""  # the piece before ``_piece``

    def _restart(self) -> None:
        self._pieces = iter_member_text(self.path, self.member, self.block)
        self.restarts += 1
        self._start = 0
        self._piece = ""
        self._prev = ""

    def _advance(self) -> bool:
        assert self._pieces is not None
        nxt = next(self._pieces, None)
        if nxt is None:
            return False
        self._start += len(self._piece)
        self._prev, self._piece = self._piece, nxt
        return True

    def read(self, offset: int, length: int) -> str:
        if offset < 0 or length < 0:
            raise BundleError("a content range needs a non-negative offset and length")
        if length == 0:
            return ""
        # The piece before the current one is kept too, so re-reading or overlapping the last page
        # does not start over.
        if self._pieces is None or offset < self._start - len(self._prev):
            self._restart()
        end = offset + length
        while self._start + len(self._piece) <= offset:
            if not self._advance():
                return ""
        base = self._start - len(self._prev)
        out = [(self._prev + self._piece)[offset - base : end - base]]
        while self._start + len(self._piece) < end and self._advance():
            out.append(self._piece[: end - self._start])
        return "".join(out)
