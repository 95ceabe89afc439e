"""A local document folder searchable with SQLite FTS5.

The index lives at a caller-chosen path (the documents folder may be read-only or shared) and is
refreshed incrementally by (mtime_ns, size), so a large corpus costs one ``stat`` per file per
refresh rather than a re-read. The index is a cache: if it is corrupt or from an older layout it is
deleted and rebuilt, never repaired.

A document is stored as passages of about ``PASSAGE_CHARS`` characters, one FTS row each, with the
passage's character offset. FTS5's ``snippet()`` scans the whole row it is given; on a 50 MB
single-row document a common word kept it busy for minutes. Per-passage rows keep that work small,
rank a long document by its best passage, and let a hit say where in the document it is.

Everything here is synchronous ``sqlite3``; async callers run it in a worker thread (the tool
registry does that for sync tools, with a time limit). A lock serialises access so concurrent tool
calls from parallel team nodes cannot interleave a refresh with a query.

The folder is untrusted input: only regular files inside it are read. FIFOs, sockets and devices
are skipped before they are opened (and opened non-blocking, so a file swapped for a FIFO after the
check still cannot block), symbolic links are followed only when their target stays inside the
folder, link loops are skipped, and files above a size cap are left out. Each such file is reported
in :attr:`Corpus.warnings`, which the tools put in front of the model and into the evidence.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from core.tools.corpus_models import DocumentPage, RefreshStats, SearchHit, content_hash, corpus_url
from core.tools.text import PASSAGE_CHARS, html_to_text, markdown_title, split_passages

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

SCHEMA_VERSION = 3  # 2: documents split into passages; 3: each document's content hash
SUPPORTED_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".html", ".htm"})
MAX_QUERY_TERMS = 64
SNIPPET_TOKENS = 24
DEFAULT_MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
# O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one;
# O_NOFOLLOW: a path checked as a regular file cannot be swapped for a link before it is opened.
_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
)
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


class CorpusQueryError(ValueError):
    """The query text contains nothing that can be searched for."""


class DocumentNotFoundError(LookupError):
    """No indexed document has this id."""


class _OtherLayout(sqlite3.DatabaseError):
    """An index written by another version: rebuilt like a corrupt one, but routine, not a warning."""


class _Skipped(Exception):
    """A file that must not be indexed; the message says why, for the warning."""


def display_name(name: str) -> str:
    """A file name as text every reader can store and show: bytes that are not UTF-8 escaped (``\\xe9``).

    Python gives such a name's bytes as lone surrogates, which SQLite, JSON and the model's prompt
    all refuse to encode: one ``caf\\xe9.md`` once broke search and reading for every document.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", errors="backslashreplace")
    return name


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


# ---------------------------------------------------------------------------------------------- text


def fts_query(text: str) -> str:
    """Turn free text into an FTS5 query that cannot be a syntax error.

    Every word becomes a quoted phrase, so operators (AND, NEAR, ``*``, ``^``, quotes, parentheses)
    in the user's text are just words. Terms are ORed: analysts and models type questions, not
    keyword lists, and requiring every word would return nothing; bm25 still ranks documents
    matching more (and rarer) terms first.
    """
    seen: dict[str, None] = {}
    for token in _TOKEN_RE.findall(text.lower()):
        seen.setdefault(token, None)
    terms = list(seen)[:MAX_QUERY_TERMS]
    if not terms:
        raise CorpusQueryError(f"the search query {text!r} contains no words to search for")
    return " OR ".join(f'"{term}"' for term in terms)


# -------------------------------------------------------------------------------------------- corpus


def _delete_passages(conn: sqlite3.Connection, doc: int) -> None:
    conn.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM passages WHERE doc = ?)", (doc,))
    conn.execute("DELETE FROM passages WHERE doc = ?", (doc,))


def _delete_document(conn: sqlite3.Connection, doc: int) -> None:
    _delete_passages(conn, doc)
    conn.execute("DELETE FROM docs WHERE rowid = ?", (doc,))


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """Tell a damaged index (rebuild it) from a busy or unopenable one (rebuilding would not help)."""
    if isinstance(exc, sqlite3.OperationalError):
        message = str(exc).lower()
        return not any(
            word in message for word in ("locked", "busy", "unable to open", "readonly", "disk i/o")
        )
    return True


class Corpus:
    """A documents folder plus its FTS5 index file."""

    def __init__(
        self,
        folder: Path,
        index_path: Path,
        *,
        max_staleness_s: float = 5.0,
        max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
        passage_chars: int = PASSAGE_CHARS,
    ) -> None:
        self.folder = Path(folder).resolve()
        self.index_path = Path(index_path)
        self.max_staleness_s = max_staleness_s
        self.max_document_bytes = max_document_bytes
        self.passage_chars = passage_chars
        self._warnings: list[str] = []
        self._collecting: list[str] | None = None
        self._lock = threading.RLock()
        self._last_refresh: float | None = None

    @property
    def warnings(self) -> list[str]:
        """Problems with the folder as of the latest refresh: files left out of the index and why.

        Replaced, not appended to, by each refresh, so a problem that was fixed stops being reported
        and one that persists is reported for as long as it lasts.
        """
        with self._lock:
            return list(self._warnings)

    # -- index file ---------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self.index_path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.index_path)
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                conn.executescript(
                    """
                    CREATE TABLE IF NOT EXISTS docs (
                        rowid INTEGER PRIMARY KEY,
                        doc_id TEXT NOT NULL UNIQUE,
                        title TEXT NOT NULL,
                        mtime_ns INTEGER NOT NULL,
                        size INTEGER NOT NULL,
                        length INTEGER NOT NULL,
                        sha256 TEXT NOT NULL
                    );
                    CREATE TABLE IF NOT EXISTS passages (
                        rowid INTEGER PRIMARY KEY,
                        doc INTEGER NOT NULL,
                        start INTEGER NOT NULL,
                        length INTEGER NOT NULL
                    );
                    CREATE INDEX IF NOT EXISTS passages_by_doc ON passages (doc, start);
                    CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
                        title, body, tokenize = 'porter unicode61 remove_diacritics 2'
                    );
                    """
                )
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                conn.commit()
            elif row[0] != str(SCHEMA_VERSION):
                raise _OtherLayout(f"index schema version {row[0]} is not {SCHEMA_VERSION}")
            # probe each table; count(*) on fts5 reads every row, 11 ms per query at 50 MB
            for table in ("docs", "passages", "fts"):
                conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

    def _delete_index(self) -> None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.index_path}{suffix}").unlink(missing_ok=True)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        conn = self._connect()
        try:
            yield conn
        finally:
            conn.close()

    # -- refresh ------------------------------------------------------------------------------------

    def _scan(self, stats: RefreshStats) -> dict[str, tuple[Path, int, int]]:
        """Find the indexable files: regular files inside the folder, reached directly or by a link."""
        found: dict[str, tuple[Path, int, int]] = {}
        index_resolved = self.index_path.resolve()

        def walk_error(exc: OSError) -> None:
            self._warn(f"cannot list folder {exc.filename}: {exc.strerror or exc}")

        for dirpath, dirnames, filenames in os.walk(self.folder, onerror=walk_error):
            # os.walk does not descend into linked folders; say so when the link leads somewhere unsafe
            kept: list[str] = []
            for d in sorted(dirnames):
                if d.startswith("."):
                    continue
                path = Path(dirpath) / d
                if path.is_symlink():
                    try:
                        self._link_target(path)
                    except _Skipped as exc:
                        self._warn(str(exc))
                        stats.skipped += 1
                    continue
                kept.append(d)
            dirnames[:] = kept
            for filename in sorted(filenames):
                if filename.startswith("."):
                    continue
                path = Path(dirpath) / filename
                if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                    continue
                try:
                    target, st = self._regular_file(path)
                except _Skipped as exc:
                    self._warn(str(exc))
                    stats.skipped += 1
                    continue
                if target == index_resolved:
                    continue
                doc_id = self._rel(path)
                if doc_id in found:  # an escaped name equal to a real one: the first keeps it
                    self._warn(f"skipped {doc_id}: another file is indexed under the same name")
                    stats.skipped += 1
                    continue
                found[doc_id] = (target, st.st_mtime_ns, st.st_size)
        return found

    def _rel(self, path: Path) -> str:
        return display_name(path.relative_to(self.folder).as_posix())

    def _link_target(self, path: Path) -> Path:
        """Resolve a symbolic link, refusing loops, dangling links and targets outside the folder."""
        try:
            target = path.resolve(strict=True)
        except RuntimeError:  # Python < 3.13 reports a loop this way
            raise _Skipped(f"skipped {self._rel(path)}: symbolic link loop") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _Skipped(f"skipped {self._rel(path)}: symbolic link loop") from None
            raise _Skipped(
                f"skipped {self._rel(path)}: broken symbolic link ({exc.strerror or exc})"
            ) from None
        if not target.is_relative_to(self.folder):
            raise _Skipped(
                f"skipped {self._rel(path)}: symbolic link to {target}, outside the corpus folder; not followed"
            )
        return target

    def _regular_file(self, path: Path) -> tuple[Path, os.stat_result]:
        """Return (real path, its stat) for a file that is safe to read, or raise ``_Skipped`` saying why.

        ``lstat`` first, so neither a FIFO nor a link is touched before it has been judged.
        """
        try:
            st = os.lstat(path)
            target = path
            if stat.S_ISLNK(st.st_mode):
                target = self._link_target(path)
                st = os.stat(target)
        except OSError as exc:
            raise _Skipped(f"skipped {self._rel(path)}: cannot stat it ({exc.strerror or exc})") from None
        if not stat.S_ISREG(st.st_mode):
            raise _Skipped(f"skipped {self._rel(path)}: {_file_kind(st.st_mode)}, not a regular file")
        self._check_size(path, st.st_size)
        return target, st

    def _check_size(self, path: Path, size: int) -> None:
        if size > self.max_document_bytes:
            raise _Skipped(
                f"skipped {self._rel(path)}: {size} bytes is over the {self.max_document_bytes}-byte "
                "document limit (corpus_max_document_bytes)"
            )

    def _warn(self, message: str) -> None:
        message = display_name(message)  # a path in it may hold a name's undecodable bytes
        if self._collecting is not None:
            self._collecting.append(message)
        else:
            self._warnings.append(message)
        if message not in self._warnings:  # the same problem found again by a later refresh is not news
            logger.warning("corpus: %s", message)

    def _read_bytes(self, path: Path, shown: Path) -> bytes:
        """Read a file judged regular by ``_scan``, re-checking on the open descriptor.

        Between the scan and this read the file may have been replaced; the non-blocking,
        no-follow open plus ``fstat`` means a FIFO or a link put there in the meantime is refused
        rather than read, and a file that grew past the cap is not read past it.
        """
        fd = os.open(path, _OPEN_FLAGS)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise _Skipped(f"skipped {self._rel(shown)}: {_file_kind(st.st_mode)}, not a regular file")
            self._check_size(shown, st.st_size)
            raw = fh.read(self.max_document_bytes + 1)
        self._check_size(shown, len(raw))
        return raw

    def _load(self, path: Path, shown: Path) -> tuple[str, str]:
        raw = self._read_bytes(path, shown)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            self._warn(f"{self._rel(shown)} is not valid UTF-8; undecodable bytes were replaced")
        text = text.removeprefix("\ufeff")
        title: str | None
        if shown.suffix.lower() in (".html", ".htm"):
            text, title = html_to_text(text)
        elif shown.suffix.lower() in (".md", ".markdown"):
            title = markdown_title(text)
        else:
            title = None
        return text, title or display_name(shown.stem)

    def refresh(self) -> RefreshStats:
        """Bring the index in line with the folder; re-read only files whose mtime or size changed."""
        with self._lock:
            rebuilt = False
            self._collecting = []
            try:
                try:
                    stats = self._refresh_once()
                except sqlite3.DatabaseError as exc:
                    if not _is_corruption(exc):
                        raise
                    if isinstance(exc, _OtherLayout):
                        logger.info("corpus: %s; rebuilding %s", exc, self.index_path)
                    else:
                        self._warn(f"index {self.index_path} is unusable ({exc}); rebuilding it")
                    self._delete_index()
                    stats = self._refresh_once()
                    rebuilt = True
                stats.rebuilt = rebuilt
                stats.warnings = self._collecting
                self._warnings = list(self._collecting)
            finally:
                self._collecting = None
            self._last_refresh = time.monotonic()
            return stats

    def _refresh_once(self) -> RefreshStats:
        if not self.folder.is_dir():
            raise FileNotFoundError(f"corpus folder {self.folder} does not exist")
        stats = RefreshStats()
        on_disk = self._scan(stats)
        with self._connection() as conn:
            indexed = {
                doc_id: (rowid, mtime_ns, size)
                for rowid, doc_id, mtime_ns, size in conn.execute(
                    "SELECT rowid, doc_id, mtime_ns, size FROM docs"
                )
            }
            with conn:  # one transaction: a crash mid-refresh leaves the previous index intact
                for doc_id, (rowid, _, _) in indexed.items():
                    if doc_id not in on_disk:
                        _delete_document(conn, rowid)
                        stats.removed += 1
                for doc_id, (path, mtime_ns, size) in on_disk.items():
                    previous = indexed.get(doc_id)
                    if previous is not None and previous[1:] == (mtime_ns, size):
                        stats.unchanged += 1
                        continue
                    shown = self.folder / doc_id
                    try:
                        text, title = self._load(path, shown)
                    except (OSError, _Skipped) as exc:
                        if isinstance(exc, OSError):
                            self._warn(f"skipped unreadable file {doc_id}: {exc.strerror or exc}")
                        else:
                            self._warn(str(exc))
                        stats.skipped += 1
                        if previous is not None:  # serving the old text would be serving a stale lie
                            _delete_document(conn, previous[0])
                            stats.removed += 1
                        continue
                    if previous is None:
                        cur = conn.execute(
                            "INSERT INTO docs (doc_id, title, mtime_ns, size, length, sha256) VALUES (?, ?, ?, ?, ?, ?)",
                            (doc_id, title, mtime_ns, size, len(text), content_hash(text)),
                        )
                        assert cur.lastrowid is not None
                        rowid = cur.lastrowid
                        stats.added += 1
                    else:
                        rowid = previous[0]
                        conn.execute(
                            "UPDATE docs SET title = ?, mtime_ns = ?, size = ?, length = ?, sha256 = ? WHERE rowid = ?",
                            (title, mtime_ns, size, len(text), content_hash(text), rowid),
                        )
                        _delete_passages(conn, rowid)
                        stats.updated += 1
                    self._insert_passages(conn, rowid, title, text)
        return stats

    def _insert_passages(self, conn: sqlite3.Connection, doc: int, title: str, text: str) -> None:
        # the title goes with every passage: each is ranked as part of its titled document
        for start, passage in split_passages(text, self.passage_chars):
            cur = conn.execute(
                "INSERT INTO passages (doc, start, length) VALUES (?, ?, ?)", (doc, start, len(passage))
            )
            conn.execute(
                "INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)", (cur.lastrowid, title, passage)
            )

    def _ensure_fresh(self) -> None:
        if self._last_refresh is None or time.monotonic() - self._last_refresh > self.max_staleness_s:
            self.refresh()

    def _with_index(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run read queries, rebuilding once if the index turned out corrupt after the last refresh."""
        with self._lock:
            self._ensure_fresh()
            try:
                with self._connection() as conn:
                    return work(conn)
            except sqlite3.DatabaseError as exc:
                if not _is_corruption(exc):
                    raise
                message = f"index {self.index_path} is unusable ({exc}); rebuilding it"
                logger.warning("corpus: %s", message)
                self._delete_index()
                self._last_refresh = None
                self.refresh()
                self._warnings.append(message)
                with self._connection() as conn:
                    return work(conn)

    # -- queries ------------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """The best ``limit`` documents for the query, each with its best passage's snippet and offset.

        Ranking runs over passages with bm25 alone; ``snippet()`` then runs on just the chosen
        passages, one each, which is what keeps a huge document from stalling the query.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        match = fts_query(query)

        def work(conn: sqlite3.Connection) -> list[SearchHit]:
            best: list[tuple[int, str, str, int, int, float, str]] = []
            seen: set[str] = set()
            ranked = conn.execute(
                """
                SELECT fts.rowid, docs.doc_id, docs.title, passages.start, passages.length,
                       bm25(fts, 4.0, 1.0) AS score, docs.sha256
                FROM fts
                JOIN passages ON passages.rowid = fts.rowid
                JOIN docs ON docs.rowid = passages.doc
                WHERE fts MATCH ?
                ORDER BY score, docs.doc_id, passages.start
                """,
                (match,),
            )
            for rowid, doc_id, title, start, length, score, sha in ranked:
                if doc_id in seen:
                    continue
                seen.add(doc_id)
                best.append((rowid, doc_id, title, start, length, score, sha))
                if len(best) == limit:
                    break
            ranked.close()
            hits: list[SearchHit] = []
            for rowid, doc_id, title, start, length, score, sha in best:
                row = conn.execute(
                    f"SELECT snippet(fts, 1, '«', '»', ' … ', {SNIPPET_TOKENS}) FROM fts "
                    "WHERE fts MATCH ? AND rowid = ?",
                    (match, rowid),
                ).fetchone()
                hits.append(
                    SearchHit(
                        document_id=doc_id,
                        title=title,
                        path=doc_id,  # relative to the corpus root: no machine path in shared evidence
                        snippet=str(row[0]) if row else "",
                        score=score,
                        offset=start,
                        length=length,
                        sha256=sha,
                    )
                )
            return hits

        return self._with_index(work)

    def document_ids(self) -> list[str]:
        return self._with_index(
            lambda conn: [str(row[0]) for row in conn.execute("SELECT doc_id FROM docs ORDER BY doc_id")]
        )

    def read(self, document_id: str, offset: int = 0, length: int = 4000) -> DocumentPage:
        """``length`` characters from ``offset``, joined from however many passages they span."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        if length < 1:
            raise ValueError(f"length must be >= 1, got {length}")

        digest = [""]

        def work(conn: sqlite3.Connection) -> tuple[str, int, str]:
            row = conn.execute(
                "SELECT rowid, title, length, sha256 FROM docs WHERE doc_id = ?", (document_id,)
            ).fetchone()
            if row is None:
                raise DocumentNotFoundError(f"no document with id {document_id!r} in the corpus")
            doc, title, total, digest[0] = int(row[0]), str(row[1]), int(row[2]), str(row[3])
            if offset > total:
                raise ValueError(f"offset {offset} is past the end of {document_id!r} (total_length {total})")
            end = min(offset + length, total)
            pieces = conn.execute(
                """
                SELECT passages.start, fts.body FROM passages JOIN fts ON fts.rowid = passages.rowid
                WHERE passages.doc = ? AND passages.start < ? AND passages.start + passages.length > ?
                ORDER BY passages.start
                """,
                (doc, end, offset),
            ).fetchall()
            if not pieces:
                return title, total, ""
            first = int(pieces[0][0])
            joined = "".join(str(body) for _, body in pieces)
            return title, total, joined[offset - first : end - first]

        title, total, text = self._with_index(work)
        end = offset + len(text)
        return DocumentPage(
            document_id=document_id,
            title=title,
            path=document_id,
            url=corpus_url(document_id),
            sha256=digest[0],
            text=text,
            offset=offset,
            total_length=total,
            next_offset=end if end < total else None,
        )
