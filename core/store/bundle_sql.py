"""Storing a text that arrives in pieces (a bundle's content member) as chunks, one chunk in memory.

``put_content`` needs the whole text; an imported gigabyte must never be whole. The pieces are
re-cut into the workspace's own chunk size, each chunk written as it fills, and the object row
(whose key is the sha256 of the whole, known only at the end) written last, in the same transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import Connection, select

from core.domain.content import ContentPolicy, ContentRef
from core.store.chunks import ChunkRepository, _insert_ignore, insert_chunk
from core.store.models import ContentObjectRow, ContentOwnerRow, ContentPartRow

__all__ = ["put_content_stream"]


class _Chunker:
    def __init__(self, policy: ContentPolicy) -> None:
        self.policy = policy
        self.pending = ""
        self.parts: list[dict[str, Any]] = []
        self.whole = hashlib.sha256()
        self.chars = 0
        self.n_bytes = 0

    def _chunk(self, conn: Connection, piece: str) -> None:
        chunk_sha, data = insert_chunk(conn, piece, self.policy.compress)
        self.whole.update(data)
        self.parts.append(
            {"idx": len(self.parts), "chunk_sha": chunk_sha, "char_start": self.chars, "n_chars": len(piece)}
        )
        self.chars += len(piece)
        self.n_bytes += len(data)

    def add(self, conn: Connection, text: str) -> None:
        size = self.policy.chunk_chars
        text = self.pending + text
        start = 0
        while len(text) - start >= size:
            self._chunk(conn, text[start : start + size])
            start += size
        self.pending = text[start:]

    def finish(self, conn: Connection, owner: str | None) -> ContentRef:
        if self.pending:
            self._chunk(conn, self.pending)
            self.pending = ""
        sha = self.whole.hexdigest()
        known = conn.execute(select(ContentObjectRow.sha256).where(ContentObjectRow.sha256 == sha)).first()
        if known is None:
            conn.execute(
                _insert_ignore(conn, ContentObjectRow),
                {"sha256": sha, "n_chars": self.chars, "n_bytes": self.n_bytes, "n_chunks": len(self.parts)},
            )
            if self.parts:
                conn.execute(
                    _insert_ignore(conn, ContentPartRow), [{"content_sha": sha, **p} for p in self.parts]
                )
        if owner is not None:
            conn.execute(_insert_ignore(conn, ContentOwnerRow), {"owner": owner, "content_sha": sha})
        return ContentRef(sha256=sha, length=self.chars, n_bytes=self.n_bytes, chunks=len(self.parts))


async def put_content_stream(
    store: ChunkRepository, pieces: AsyncIterator[str], *, owner: str | None = None
) -> ContentRef:
    """Store a text given piece by piece; memory holds one chunk (plus the piece being cut)."""
    chunker = _Chunker(store.content_policy)
    async with store._write_conn() as conn:
        async for text in pieces:
            await conn.run_sync(chunker.add, text)
        return await conn.run_sync(chunker.finish, owner)
