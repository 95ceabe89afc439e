"""Evidence as content: big texts stored as content-addressed chunks (migration 0008_chunks).

A text above the inline limit is cut into chunks of at most ``chunk_chars`` characters (so always
on a character boundary, and at most 4 bytes per character), each stored once under the sha256 of
its UTF-8 bytes, optionally zlib-compressed. A content object is the ordered list of its chunks
with the total length and the sha256 of the whole. No stored value is bigger than one chunk, so a
2 GB tool result stores on SQLite (whose values stop at 1e9 bytes) and on PostgreSQL (bytea).

Reading streams: ``iter_content`` yields one chunk's text at a time and ``read_range`` returns a
character range touching only the chunks under it, so memory is bounded by a chunk, not a task.
The writers are sync functions over a ``Connection`` so the event writer's worker thread and async
transactions (through ``run_sync``) share them and a content object commits with what refers to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import zlib
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from typing import Any

from sqlalchemy import Connection, delete, exists, select, update
from sqlalchemy.dialects import postgresql, sqlite

from core.domain.content import (
    DEFAULT_POLICY,
    OFFLOADED_KEYS,
    REF_SUFFIX,
    ContentPolicy,
    ContentRef,
    find_refs,
    has_refs,
    is_ref,
)
from core.errors import StoreError
from core.leftovers import IMPORT_OWNER_PREFIX, is_dead_import_owner
from core.store.base import StoreBase
from core.store.models import (
    BatchRow,
    ContentChunkRow,
    ContentObjectRow,
    ContentOwnerRow,
    ContentPartRow,
    SessionRow,
    TaskRow,
)

__all__ = [
    "DEFAULT_POLICY",
    "ChunkRepository",
    "ContentPolicy",
    "chunk_shas_sync",
    "chunk_text_sync",
    "find_refs",
    "has_refs",
    "iter_chunk_texts",
    "offload_tree",
    "put_content",
    "text_sha256",
]


log = logging.getLogger(__name__)

# Chunks tokenised at once by ``chunk_token_counts``: one per core, at least two, at most four.
COUNT_BATCH = max(2, min(4, os.cpu_count() or 2))
# Ids per IN list when releasing content: well under SQLite's and PostgreSQL's parameter limits.
_RELEASE_BATCH = 500


def iter_chunk_texts(text: str, chunk_chars: int) -> Iterator[str]:
    for start in range(0, len(text), chunk_chars):
        yield text[start : start + chunk_chars]


def text_sha256(text: str, piece_chars: int = 1 << 20) -> str:
    """The content sha256 ``put_content`` gives ``text``, hashed a piece at a time (no whole copy)."""
    whole = hashlib.sha256()
    for piece in iter_chunk_texts(text, piece_chars):
        whole.update(piece.encode("utf-8", "surrogatepass"))
    return whole.hexdigest()


def _insert_ignore(conn: Connection, table: Any) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING: the same chunk written twice (dedup, or a race) is one row."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(table).on_conflict_do_nothing()


def _pack(data: bytes, compress: bool) -> tuple[str, bytes]:
    if compress:
        packed = zlib.compress(data, 1)
        if len(packed) < len(data):
            return "zlib", packed
    return "", data


def insert_chunk(conn: Connection, piece: str, compress: bool) -> tuple[str, bytes]:
    """Store one chunk (once: a chunk already present is left as it is); its sha256 and UTF-8 bytes.

    The one place a chunk row is written, for texts put whole and for texts streamed in (imports)."""
    data = piece.encode("utf-8", "surrogatepass")
    chunk_sha = hashlib.sha256(data).hexdigest()
    codec, packed = _pack(data, compress)
    conn.execute(
        _insert_ignore(conn, ContentChunkRow),
        {"sha256": chunk_sha, "codec": codec, "n_chars": len(piece), "n_bytes": len(data), "data": packed},
    )
    return chunk_sha, data


def _unpack(codec: str, data: bytes) -> bytes:
    if codec == "zlib":
        return zlib.decompress(data)
    if codec:
        raise StoreError(f"evidence chunk stored with unknown codec {codec!r}")
    return bytes(data)


def put_content(
    conn: Connection, text: str, owner: str | None, policy: ContentPolicy = DEFAULT_POLICY
) -> ContentRef:
    """Store ``text`` as chunks (once: an object already present costs one hash pass) and own it."""
    whole = hashlib.sha256()
    n_bytes = 0
    for piece in iter_chunk_texts(text, policy.chunk_chars):
        data = piece.encode("utf-8", "surrogatepass")
        whole.update(data)
        n_bytes += len(data)
    sha = whole.hexdigest()
    n_chunks = (len(text) + policy.chunk_chars - 1) // policy.chunk_chars
    known = conn.execute(
        select(ContentObjectRow.n_chars, ContentObjectRow.n_bytes, ContentObjectRow.n_chunks).where(
            ContentObjectRow.sha256 == sha
        )
    ).one_or_none()
    if known is not None:
        ref = ContentRef(sha256=sha, length=int(known[0]), n_bytes=int(known[1]), chunks=int(known[2]))
    else:
        parts: list[dict[str, Any]] = []
        start = 0
        for idx, piece in enumerate(iter_chunk_texts(text, policy.chunk_chars)):
            chunk_sha, _data = insert_chunk(conn, piece, policy.compress)
            parts.append(
                {
                    "content_sha": sha,
                    "idx": idx,
                    "chunk_sha": chunk_sha,
                    "char_start": start,
                    "n_chars": len(piece),
                }
            )
            start += len(piece)
        conn.execute(
            _insert_ignore(conn, ContentObjectRow),
            {"sha256": sha, "n_chars": len(text), "n_bytes": n_bytes, "n_chunks": n_chunks},
        )
        if parts:
            conn.execute(_insert_ignore(conn, ContentPartRow), parts)
        ref = ContentRef(sha256=sha, length=len(text), n_bytes=n_bytes, chunks=n_chunks)
    if owner is not None:
        conn.execute(_insert_ignore(conn, ContentOwnerRow), {"owner": owner, "content_sha": sha})
    return ref


def offload_tree(
    conn: Connection, value: Any, owner: str | None, policy: ContentPolicy = DEFAULT_POLICY
) -> Any:
    """A copy of a JSON value whose big texts under ``OFFLOADED_KEYS`` became chunk references.

    The key keeps an empty string (readers of old shapes see a blank, never a crash) and the
    reference sits beside it as ``<key>_ref``; small texts and everything else are unchanged.
    """
    if isinstance(value, list):
        return [offload_tree(conn, v, owner, policy) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        if key in OFFLOADED_KEYS and isinstance(v, str) and policy.offloads(v):
            out[key] = ""
            out[key + REF_SUFFIX] = put_content(conn, v, owner, policy).model_dump()
        elif key.endswith(REF_SUFFIX) and v is None and key in out:
            continue  # a model's empty ``*_ref`` field, just filled by its emptied text above
        else:
            out[key] = offload_tree(conn, v, owner, policy)
    return out


# The key of an event payload under which its own big texts wait in the chunk store (as
# ``{"content": "", "content_ref": ...}``): apart from the payload's ``content_ref``, which is the
# event's ``content`` column's, so a payload field named ``content`` (a model's answer) never clashes.
CHUNKED_PAYLOAD = "chunked_fields"


def offload_payload(
    conn: Connection, payload: dict[str, Any], owner: str, policy: ContentPolicy = DEFAULT_POLICY
) -> dict[str, Any]:
    """An event payload whose big top-level texts (an answer, a run's output) became chunks.

    The field keeps an empty string, so a reader of the stored row that skips ``resolve_payload``
    sees a blank text, never a crash or a wrong one; the payload is unchanged when nothing is big.
    """
    big = {
        k: v for k, v in payload.items() if k in OFFLOADED_KEYS and isinstance(v, str) and policy.offloads(v)
    }
    if not big:
        return payload
    chunked: dict[str, Any] = {}
    for key, text in big.items():
        chunked[key] = ""
        chunked[key + REF_SUFFIX] = put_content(conn, text, owner, policy).model_dump()
    return {**payload, **dict.fromkeys(big, ""), CHUNKED_PAYLOAD: chunked}


def chunked_payload_refs(payload: dict[str, Any]) -> dict[str, ContentRef]:
    """The payload's own fields stored as chunks (``offload_payload``), by field name."""
    chunked = payload.get(CHUNKED_PAYLOAD)
    if not isinstance(chunked, dict):
        return {}
    return {
        key[: -len(REF_SUFFIX)]: ContentRef.model_validate(v)
        for key, v in chunked.items()
        if is_ref(chunked, key)
    }


def resolve_payload_sync(conn: Connection, payload: dict[str, Any]) -> dict[str, Any]:
    """``offload_payload`` undone on a sync connection: the payload as its writer gave it."""
    refs = chunked_payload_refs(payload)
    if not refs:
        return payload
    out = {k: v for k, v in payload.items() if k != CHUNKED_PAYLOAD}
    return out | {key: read_content_sync(conn, ref.sha256) for key, ref in refs.items()}


def read_content_sync(conn: Connection, sha256: str) -> str:
    """A content object's whole text on a connection already inside a transaction.

    For writers that must see what they just stored in the same transaction (the search index
    reads evidence through ``chunk_text_sync``, one chunk at a time, instead).
    """
    # One chunk at a time, and a chunk row gone is the one-line error, never a shorter text.
    return "".join(chunk_text_sync(conn, chunk_sha) for chunk_sha in chunk_shas_sync(conn, sha256))


def chunk_shas_sync(conn: Connection, sha256: str) -> list[str]:
    """A content object's chunk hashes in order (one small row each), inside the caller's transaction."""
    rows = conn.execute(
        select(ContentPartRow.chunk_sha)
        .where(ContentPartRow.content_sha == sha256)
        .order_by(ContentPartRow.idx)
    ).all()
    return [str(r[0]) for r in rows]


def chunk_text_sync(conn: Connection, chunk_sha: str) -> str:
    """One chunk's text on a sync connection: what a writer streaming a big item reads per step."""
    row = conn.execute(
        select(ContentChunkRow.codec, ContentChunkRow.data).where(ContentChunkRow.sha256 == chunk_sha)
    ).one_or_none()
    if row is None:
        raise StoreError(f"evidence chunk {chunk_sha[:12]} is missing from the workspace")
    return _unpack(str(row[0]), row[1]).decode("utf-8", "surrogatepass")


def resolve_tree_sync(conn: Connection, value: Any) -> Any:
    """``ChunkRepository.resolve_tree`` on a sync connection inside the caller's transaction."""
    if isinstance(value, list):
        return [resolve_tree_sync(conn, v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        if is_ref(value, key):
            out[key[: -len(REF_SUFFIX)]] = read_content_sync(conn, ContentRef.model_validate(v).sha256)
            out[key] = None
        elif key in OFFLOADED_KEYS and is_ref(value, key + REF_SUFFIX):
            out.setdefault(key, "")
        else:
            out[key] = resolve_tree_sync(conn, v)
    return out


class ChunkRepository(StoreBase):
    """Reading, writing and sweeping chunked content; a mixin of ``Store``."""

    async def put_content(self, text: str, *, owner: str | None = None) -> ContentRef:
        policy = self.content_policy
        async with self._write_conn() as conn:
            return await conn.run_sync(put_content, text, owner, policy)

    async def resolve_tree(self, value: Any) -> Any:
        """A copy of a JSON value with every chunk reference read back into its text (old shape).

        The compatibility path: callers that need a packet or payload as it was before chunking get
        it here, whole in memory; streaming callers read the references with ``iter_content``.
        """
        if isinstance(value, list):
            return [await self.resolve_tree(v) for v in value]
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for key, v in value.items():
            if is_ref(value, key):
                # The text comes back; the ref key stays, empty, as a model's dump has it.
                out[key[: -len(REF_SUFFIX)]] = await self.read_content(ContentRef.model_validate(v))
                out[key] = None
            elif key in OFFLOADED_KEYS and is_ref(value, key + REF_SUFFIX):
                out.setdefault(key, "")
            else:
                out[key] = await self.resolve_tree(v)
        return out

    async def resolve_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``offload_payload`` undone: the payload as its writer gave it (its big texts read back)."""
        refs = chunked_payload_refs(payload)
        if not refs:
            return payload
        out = {k: v for k, v in payload.items() if k != CHUNKED_PAYLOAD}
        return out | {key: await self.read_content(ref) for key, ref in refs.items()}

    async def content_ref(self, sha256: str) -> ContentRef:
        async with self._read() as s:
            row = await s.get(ContentObjectRow, sha256)
            if row is None:
                raise StoreError(f"no stored evidence content {sha256[:12]}")
            return ContentRef(sha256=row.sha256, length=row.n_chars, n_bytes=row.n_bytes, chunks=row.n_chunks)

    async def _parts(self, sha256: str, start: int = 0, end: int | None = None) -> list[tuple[str, int, int]]:
        q = select(ContentPartRow.chunk_sha, ContentPartRow.char_start, ContentPartRow.n_chars).where(
            ContentPartRow.content_sha == sha256
        )
        if end is not None:
            q = q.where(ContentPartRow.char_start < end)
        if start > 0:
            q = q.where(ContentPartRow.char_start + ContentPartRow.n_chars > start)
        async with self._read() as s:
            rows = (await s.execute(q.order_by(ContentPartRow.idx))).all()
        return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]

    async def chunk_text(self, chunk_sha: str) -> str:
        """One chunk's text: one row read, one value in memory."""
        async with self._read() as s:
            row = (
                await s.execute(
                    select(ContentChunkRow.codec, ContentChunkRow.data).where(
                        ContentChunkRow.sha256 == chunk_sha
                    )
                )
            ).one_or_none()
        if row is None:
            raise StoreError(f"evidence chunk {chunk_sha[:12]} is missing from the workspace")
        return _unpack(str(row[0]), row[1]).decode("utf-8", "surrogatepass")

    async def iter_content(self, ref: ContentRef | str) -> AsyncIterator[str]:
        """The text of a content object, one chunk at a time (memory: one chunk)."""
        sha = ref if isinstance(ref, str) else ref.sha256
        parts = await self._parts(sha)
        expected = ref.chunks if isinstance(ref, ContentRef) else None
        if expected is not None and len(parts) != expected:
            raise StoreError(f"stored evidence content {sha[:12]} has {len(parts)} of {expected} chunks")
        for chunk_sha, _start, _n in parts:
            yield await self.chunk_text(chunk_sha)

    async def read_content(self, ref: ContentRef | str) -> str:
        """The whole text: for small objects and for callers that need it all (an LLM prompt).

        Content held by ``sharing`` comes back as the held string itself, not a new copy."""
        shared = self._shared_texts.get(ref if isinstance(ref, str) else ref.sha256)
        if shared is not None:
            return shared
        return "".join([piece async for piece in self.iter_content(ref)])

    @contextlib.contextmanager
    def sharing(self, text: str) -> Iterator[None]:
        """While inside, whole reads of ``text``'s content return ``text`` itself.

        An attempt's answer is read back by the packet builder (the run's events), by the attempt's
        record (its column and its packet) and by the validator, each a new copy of the same text:
        a 50 MB answer was six copies alive at once. The text is content-addressed, so the held
        string is what any read would return. Holds nest and count; the last exit forgets it."""
        if not text:
            yield
            return
        sha = text_sha256(text)
        self._shared_texts.setdefault(sha, text)
        self._shared_holds[sha] = self._shared_holds.get(sha, 0) + 1
        try:
            yield
        finally:
            left = self._shared_holds[sha] - 1
            if left:
                self._shared_holds[sha] = left
            else:
                del self._shared_holds[sha], self._shared_texts[sha]

    async def read_range(self, ref: ContentRef | str, offset: int, length: int) -> str:
        """Characters ``[offset, offset + length)``: reads only the chunks under the range (paging)."""
        if offset < 0 or length < 0:
            raise StoreError("a content range needs a non-negative offset and length")
        if length == 0:
            return ""
        sha = ref if isinstance(ref, str) else ref.sha256
        end = offset + length
        out: list[str] = []
        for chunk_sha, start, _n in await self._parts(sha, offset, end):
            text = await self.chunk_text(chunk_sha)
            out.append(text[max(0, offset - start) : end - start])
        return "".join(out)

    async def chunk_token_counts(
        self, ref: ContentRef | str, model: str, count: Callable[[str], int]
    ) -> list[tuple[int, int, int]]:
        """Each chunk's ``(char_start, n_chars, tokens)``; a chunk is tokenised once per model, ever.

        The count is cached on the chunk row, so a plan over a packet reads cached numbers and only
        a chunk never counted for ``model`` costs a tokenizer pass (over that chunk alone).
        """
        sha = ref if isinstance(ref, str) else ref.sha256
        parts = await self._parts(sha)
        chunk_shas = sorted({p[0] for p in parts})
        async with self._read() as s:
            cached = {
                str(r[0]): (r[1] or {})
                for r in (
                    await s.execute(
                        select(ContentChunkRow.sha256, ContentChunkRow.token_counts).where(
                            ContentChunkRow.sha256.in_(chunk_shas)
                        )
                    )
                ).all()
            }
        counts = {sha: int(known[model]) for sha, known in cached.items() if model in known}
        missing = [sha for sha in chunk_shas if sha not in counts]
        # Uncounted chunks go to the tokenizer a few at a time, in threads: off the event loop (the
        # desk shares it), in parallel where the tokenizer releases the GIL (tiktoken does), with
        # memory bounded by one batch of chunks; each batch's counts are written in one transaction.
        for at in range(0, len(missing), COUNT_BATCH):
            batch = missing[at : at + COUNT_BATCH]
            texts = [await self.chunk_text(sha) for sha in batch]
            found = await asyncio.gather(*(asyncio.to_thread(count, text) for text in texts))
            del texts
            async with self._write() as s:
                for sha, n in zip(batch, found, strict=True):
                    counts[sha] = int(n)
                    await s.execute(
                        update(ContentChunkRow)
                        .where(ContentChunkRow.sha256 == sha)
                        .values(token_counts={**cached.get(sha, {}), model: int(n)})
                    )
        return [(start, n_chars, counts[chunk_sha]) for chunk_sha, start, n_chars in parts]

    async def release_content(self, owners: Collection[str]) -> int:
        """Drop content written for owners that never came to be (an import that failed midway).

        A bundle's texts are stored before its task rows (streamed member by member, outside the
        rows' transaction), so a failed import would otherwise leave them behind while saying
        "nothing was imported". Only these owners' rows go, and only where no task or session of
        that id exists; an object or chunk another owner or object still holds stays. Unlike
        ``sweep_content`` this never touches content written for some other import in flight.
        Returns the chunks deleted.
        """
        gone = 0
        ids = list(dict.fromkeys(owners))
        async with self._write() as s:
            for start in range(0, len(ids), _RELEASE_BATCH):
                batch = ids[start : start + _RELEASE_BATCH]
                unheld = (
                    ContentOwnerRow.owner.in_(batch),
                    ~exists().where(TaskRow.id == ContentOwnerRow.owner),
                    ~exists().where(SessionRow.id == ContentOwnerRow.owner),
                )
                shas = list(
                    dict.fromkeys((await s.scalars(select(ContentOwnerRow.content_sha).where(*unheld))).all())
                )
                if not shas:
                    continue
                await s.execute(delete(ContentOwnerRow).where(*unheld))
                other_owner = exists().where(ContentOwnerRow.content_sha == ContentObjectRow.sha256)
                orphans = list(
                    (
                        await s.scalars(
                            select(ContentObjectRow.sha256).where(
                                ContentObjectRow.sha256.in_(shas), ~other_owner
                            )
                        )
                    ).all()
                )
                if not orphans:
                    continue
                chunk_shas = list(
                    dict.fromkeys(
                        (
                            await s.scalars(
                                select(ContentPartRow.chunk_sha).where(
                                    ContentPartRow.content_sha.in_(orphans)
                                )
                            )
                        ).all()
                    )
                )
                await s.execute(delete(ContentPartRow).where(ContentPartRow.content_sha.in_(orphans)))
                await s.execute(delete(ContentObjectRow).where(ContentObjectRow.sha256.in_(orphans)))
                for at in range(0, len(chunk_shas), _RELEASE_BATCH):
                    result = await s.execute(
                        delete(ContentChunkRow).where(
                            ContentChunkRow.sha256.in_(chunk_shas[at : at + _RELEASE_BATCH]),
                            ~exists().where(ContentPartRow.chunk_sha == ContentChunkRow.sha256),
                        )
                    )
                    gone += int(getattr(result, "rowcount", 0) or 0)
        return gone

    async def release_dead_imports(self) -> int:
        """Release the texts of imports whose process died before their rows committed (a SIGKILL).

        An import stores its texts under its own owner (``core.leftovers.import_owner``) and hands
        them to its tasks in the rows' transaction; an owner of that shape still here belongs to an
        import in flight or to one that was killed. Only those of dead processes of this host go,
        so an import running beside this one (another process, a shared workspace) is never
        touched. Returns the chunks deleted; says so in one log line.
        """
        async with self._read() as s:
            owners = (
                await s.scalars(
                    select(ContentOwnerRow.owner)
                    # A key range rather than LIKE: the owner index answers it on both engines.
                    .where(
                        ContentOwnerRow.owner >= IMPORT_OWNER_PREFIX,
                        ContentOwnerRow.owner
                        < IMPORT_OWNER_PREFIX[:-1] + chr(ord(IMPORT_OWNER_PREFIX[-1]) + 1),
                    )
                    .distinct()
                )
            ).all()
        dead = [str(o) for o in owners if is_dead_import_owner(str(o))]
        if not dead:
            return 0
        gone = await self.release_content(dead)
        log.warning(
            "removed the content of %d interrupted import(s) (%d chunk(s) no task holds)", len(dead), gone
        )
        return gone

    async def sweep_content(self) -> int:
        """Delete content no task or session holds any more; returns the chunks deleted.

        Owners are task or session ids, or a batch's id (its team template, carried with the jobs):
        when a task (and its sessions) is gone, its owner rows go, then objects nobody owns, then
        chunks no object lists. A chunk shared with a live task stays.
        """
        async with self._write() as s:
            await s.execute(
                delete(ContentOwnerRow).where(
                    ~exists().where(TaskRow.id == ContentOwnerRow.owner),
                    ~exists().where(SessionRow.id == ContentOwnerRow.owner),
                    ~exists().where(BatchRow.id == ContentOwnerRow.owner),
                )
            )
            await s.execute(
                delete(ContentPartRow).where(
                    ~exists().where(ContentOwnerRow.content_sha == ContentPartRow.content_sha)
                )
            )
            await s.execute(
                delete(ContentObjectRow).where(
                    ~exists().where(ContentOwnerRow.content_sha == ContentObjectRow.sha256)
                )
            )
            result = await s.execute(
                delete(ContentChunkRow).where(
                    ~exists().where(ContentPartRow.chunk_sha == ContentChunkRow.sha256)
                )
            )
            return int(getattr(result, "rowcount", 0) or 0)
