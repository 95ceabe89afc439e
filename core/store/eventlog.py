"""The append-only event log: one insert path, one writer, awaited or written behind.

Every event enters the log through ``insert_events``: the session's counter row is bumped with
``UPDATE ... RETURNING`` in the same transaction as the insert, so ``seq`` is contiguous per session
whatever the number of writers (coroutines or processes) and a number is never reused.

Appends are queued for one background writer that commits everything queued in one transaction;
write-behind appends wait a few milliseconds first, so several agent turns share a transaction.
``enqueue_events`` (the agent loop's hot path) returns at once; ``append_events`` queues the same way
and waits for its own commit. One queue means the log keeps the order in which a coroutine produced
its events, whichever of the two it used. On SQLite the writer runs each batch in a worker thread on
a plain (sync) SQLAlchemy engine, so the event loop, and the desk painting on it, does none of it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from operator import attrgetter
from typing import Any, TypeVar

from sqlalchemy import Connection, Integer, Select, String, bindparam, case, func, insert, select, update
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from core.domain.content import DEFAULT_POLICY, ContentPolicy, ContentRef
from core.domain.event_codec import encode, payload_key
from core.domain.event_payloads import EventPayload, LlmResponse, TokenUsage, ValidationDebug
from core.domain.facts import EventKind
from core.domain.records import EventRecord
from core.domain.usage import UsageTotals
from core.errors import DatabaseUnreachable, StoreError
from core.store import engine as engines
from core.store.chunks import (
    CHUNKED_PAYLOAD,
    ChunkRepository,
    chunked_payload_refs,
    offload_payload,
    put_content,
)
from core.store.models import EventRow, SessionRow, utcnow
from core.store.reachability import is_connection_lost

BUSY_RETRIES = 6  # a locked database is retried after 0.1, 0.2, ... 3.2 s before giving up
WRITE_BEHIND_S = 0.05
"""How long write-behind events may wait for company before they are committed.

A turn of the agent loop with a zero-delay model takes two to four milliseconds and enqueues
twice (the model's answer, then the tool results). Each transaction costs the loop about half a
millisecond whatever it holds (a worker-thread hop there and back, and the writer's Python holding
the GIL meanwhile), so the number of commits, not of events, is what the log adds to a turn:
measured against bare litellm per turn (``bench_loop_overhead``'s runs, interleaved), a 10 ms
window cost 1.41x, 30 ms 1.34x, 50 ms 1.30x. A real model answers in hundreds of milliseconds, so
there each turn's events are committed long before the next answer either way. An awaited append
or a ``flush()`` (every read of the log or of runs) ends the wait at once, so no reader and no run
end is held by it; a process killed meanwhile loses at most this window of events (a run's start
included), which crash recovery already handles (the run has no ``run_finished``, and is marked
interrupted, or has no row and its task is).
"""


@dataclass(slots=True)
class NewEvent:
    """An event not yet stored; the store assigns id, seq and time. Writers build it with ``new_event``.

    A plain dataclass, not a pydantic model: the agent loop builds three a turn from a payload its
    typed model has just dumped, so validating the dict again bought nothing and cost the loop.
    """

    kind: str
    payload: dict[str, Any]
    content: str | None = None


def new_event(payload: EventPayload, *, content: str | None = None) -> NewEvent:
    """The event recording a typed payload: its kind comes from the payload's model (one table)."""
    kind, data = encode(payload)
    return NewEvent(kind=kind, payload=data, content=content)


# Payload keys the SQL below reads inside the database, taken from the models: renaming a field
# fails here, at import, instead of leaving a query summing a key nothing writes.
CONTENT_REF = payload_key(EventPayload, "content_ref")
_USAGE = payload_key(LlmResponse, "usage")
_LLM_CALLS = payload_key(ValidationDebug, "llm_calls")
_PROMPT_TOKENS = payload_key(TokenUsage, "prompt_tokens")
_COMPLETION_TOKENS = payload_key(TokenUsage, "completion_tokens")
_COST_USD = payload_key(TokenUsage, "cost_usd")
assert payload_key(ValidationDebug, "usage") == _USAGE  # task_spend reads both kinds' usage alike


_BUMP_SEQ = (
    update(SessionRow)
    .where(SessionRow.id == bindparam("session", type_=String))
    .values(next_seq=SessionRow.next_seq + bindparam("n", type_=Integer))
    .returning(SessionRow.next_seq - bindparam("n", type_=Integer))
)
_INSERT = insert(EventRow)
_IDS = select(EventRow.seq, EventRow.id).where(
    EventRow.session_id == bindparam("session", type_=String),
    EventRow.seq >= bindparam("first", type_=Integer),
    EventRow.seq <= bindparam("last", type_=Integer),
)


T = TypeVar("T")


@dataclass(eq=False)
class PendingAppend:
    """Events of one session waiting to be appended, and who (if anyone) awaits their commit."""

    session_id: str
    events: list[NewEvent]
    run_id: str | None = None
    task_id: str | None = None
    done: asyncio.Future[list[EventRecord]] | None = None
    before: Callable[[Connection], None] | None = None  # statements committed with these events
    records: bool = True  # the waiter wants the stored records back (ids are read after the insert)
    # When a write-behind append was queued: its events' time. The commit may come up to the
    # write-behind window later, and a run's start shares it with the run's first events (or, for
    # a short run, its end): stamped at the commit, a run would read shorter than it was.
    queued_at: datetime | None = None


def _stored_form(
    conn: Connection, ev: NewEvent, owner: str, policy: ContentPolicy
) -> tuple[dict[str, Any], str | None]:
    """Payload and content as stored: a big content becomes chunks and a ``content_ref`` in the payload."""
    payload = offload_payload(conn, ev.payload, owner, policy)
    if not policy.offloads(ev.content):
        return payload, ev.content
    assert ev.content is not None
    ref = put_content(conn, ev.content, owner, policy)
    return {**payload, CONTENT_REF: ref.model_dump()}, None


def insert_events(
    conn: Connection,
    appends: Sequence[PendingAppend],
    now: datetime,
    policy: ContentPolicy = DEFAULT_POLICY,
) -> list[list[dict[str, Any]]]:
    """The only way events are appended; returns each append's stored rows (without ids).

    Takes a sync connection so the same code runs in the writer's worker thread and, through
    ``AsyncConnection.run_sync``, inside any async transaction (a status change and its event).
    Consecutive appends of one session share one counter bump, and all rows go in one
    executemany: per-statement overhead, not the rows, is what a turn of the agent loop pays for.
    A content above ``policy``'s inline limit is written as chunks in the same transaction, owned
    by the event's task (or its session outside a task), and the row keeps only the reference.
    """
    out: list[list[dict[str, Any]]] = []
    for session_id, run in groupby(appends, key=attrgetter("session_id")):
        group = list(run)
        count = sum(len(a.events) for a in group)
        if not count:  # statements only (a session being created): no number to allocate
            out.extend([] for _ in group)
            continue
        first = conn.execute(_BUMP_SEQ, {"session": session_id, "n": count}).scalar()
        if first is None:
            raise StoreError(f"no session with id {session_id!r}")
        seq = int(first)
        for a in group:
            rows_of_append: list[dict[str, Any]] = []
            at = a.queued_at or now
            for i, ev in enumerate(a.events):
                payload, content = _stored_form(conn, ev, a.task_id or session_id, policy)
                rows_of_append.append(
                    {
                        "session_id": session_id,
                        "run_id": a.run_id,
                        "task_id": a.task_id,
                        "seq": seq + i,
                        "kind": ev.kind,
                        "payload": payload,
                        "content": content,
                        "created_at": at,
                    }
                )
            out.append(rows_of_append)
            seq += len(a.events)
    rows = [row for item in out for row in item]
    if rows:
        conn.execute(_INSERT, rows)
    # The records handed back carry each payload as its writer gave it, its big texts in memory
    # still: the rows in the database hold them as chunks (``offload_payload``).
    events = [ev for a in appends for ev in a.events]
    for row, ev in zip(rows, events, strict=True):
        if CHUNKED_PAYLOAD in row["payload"]:
            row["payload"] = {**ev.payload, **{k: v for k, v in row["payload"].items() if k == CONTENT_REF}}
    return out


def stored_records(conn: Connection, rows: list[dict[str, Any]]) -> list[EventRecord]:
    """The records of rows just inserted, with their ids (looked up by the unique session and seq)."""
    if not rows:
        return []
    found = conn.execute(
        _IDS, {"session": rows[0]["session_id"], "first": rows[0]["seq"], "last": rows[-1]["seq"]}
    )
    ids = {int(seq): int(id_) for seq, id_ in found}
    return [EventRecord(id=ids[row["seq"]], **row) for row in rows]


def _insert_batch(
    conn: Connection, batch: list[PendingAppend], now: datetime, policy: ContentPolicy = DEFAULT_POLICY
) -> list[list[EventRecord]]:
    for a in batch:
        if a.before is not None:
            a.before(conn)
    stored = insert_events(conn, batch, now, policy)
    return [
        stored_records(conn, rows) if a.done is not None and a.records else []
        for a, rows in zip(batch, stored, strict=True)
    ]


def is_busy(exc: BaseException) -> bool:
    """SQLite's "database is locked/busy": another writer held the file past the busy timeout."""
    message = str(getattr(exc, "orig", exc)).lower()
    return isinstance(exc, (sqlite3.OperationalError, OperationalError)) and (
        "locked" in message or "busy" in message
    )


class EventLog(ChunkRepository):
    """Appending to and reading the event log; a mixin of ``Store``."""

    def __init__(
        self,
        engine: AsyncEngine,
        url: str,
        write_engine: AsyncEngine | None = None,
        *,
        busy_timeout: float = engines.DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        super().__init__(engine, url, write_engine, busy_timeout=busy_timeout)
        self._queue: list[PendingAppend] = []
        self._writer: asyncio.Task[None] | None = None
        self._in_flight: list[PendingAppend] = []  # the batch being committed
        self._session_errors: dict[str, Exception] = {}
        # Called with the retry number whenever the writer finds the database locked by another
        # process and will try again: a caller can say "waiting for another process" meanwhile.
        self.on_busy: Callable[[int], None] | None = None
        path = engines.sqlite_path(url) if self.is_sqlite else None
        self._thread_engine = (
            engines.make_thread_engine(path, busy_timeout=busy_timeout) if path is not None else None
        )
        self._thread_conn: Connection | None = None
        self._read_thread_engine = (
            engines.make_thread_read_engine(url, busy_timeout=busy_timeout) if path is not None else None
        )
        self.write_behind_s = WRITE_BEHIND_S
        self._hurry = False  # someone waits for the queue: commit without the write-behind window
        self._window: asyncio.Future[None] | None = None  # the writer waiting out that window

    async def append_event(
        self,
        session_id: str,
        kind: str,
        payload: dict[str, Any],
        *,
        content: str | None = None,
        run_id: str | None = None,
        task_id: str | None = None,
    ) -> EventRecord:
        """Append one event; ``seq`` is allocated in the same transaction, so it is never reused."""
        (record,) = await self.append_events(
            session_id,
            [NewEvent(kind=kind, payload=payload, content=content)],
            run_id=run_id,
            task_id=task_id,
        )
        return record

    async def append_events(
        self,
        session_id: str,
        events: Sequence[NewEvent],
        *,
        run_id: str | None = None,
        task_id: str | None = None,
        before: Callable[[Connection], None] | None = None,
    ) -> list[EventRecord]:
        """Append several events of one session atomically, with contiguous ``seq`` numbers.

        ``before`` runs in the same transaction, first: a row the events describe (a run
        starting or finishing) is written with them, not in a transaction of its own.

        Anything queued before with ``enqueue_events`` is written first. Raises if this session's
        earlier write-behind events were lost, instead of writing past the hole. A caller
        cancelled while waiting may still find its events in the log: they were already queued.
        """
        if not events:
            await self.flush(session_id)
            return []
        done: asyncio.Future[list[EventRecord]] = asyncio.get_running_loop().create_future()
        self._submit(PendingAppend(session_id, list(events), run_id, task_id, done, before))
        return await done

    async def commit_events(
        self,
        session_id: str,
        events: Sequence[NewEvent],
        *,
        run_id: str | None = None,
        task_id: str | None = None,
        before: Callable[[Connection], None] | None = None,
    ) -> None:
        """``append_events`` for a caller that needs no records back (a run starting or ending).

        Returns once the events are committed, exactly as ``append_events`` does, but the writer
        does not read the new rows' ids back: a SELECT and a record per event that nobody used.
        """
        done: asyncio.Future[list[EventRecord]] = asyncio.get_running_loop().create_future()
        self._submit(PendingAppend(session_id, list(events), run_id, task_id, done, before, records=False))
        await done

    async def write_in_log_order(self, session_id: str, statements: Callable[[Connection], None]) -> None:
        """Run ``statements`` in the event writer's next transaction and wait for its commit.

        For a row that belongs with the log, like a new session: it shares the commit (and, on
        SQLite, the single worker-thread hop) of whatever else is queued, instead of paying an
        ORM unit of work and an async driver round trip per statement on its own. Queued behind
        everything already submitted, so the log's order is kept. Errors are the same as a
        store write's: a damaged or unwritable database becomes one ``StoreError`` line.
        """
        done: asyncio.Future[list[EventRecord]] = asyncio.get_running_loop().create_future()
        self._submit(PendingAppend(session_id, [], done=done, before=statements, records=False))
        with self._database_errors():
            await done

    def enqueue_events(
        self,
        session_id: str,
        events: Sequence[NewEvent],
        *,
        run_id: str | None = None,
        task_id: str | None = None,
        before: Callable[[Connection], None] | None = None,
    ) -> None:
        """Write-behind append for the agent loop's hot path; ``before`` as for ``append_events``.

        A turn does not wait for its log writes. ``flush()`` (called by every read of the log)
        waits until they are durable. Events wait up to ``write_behind_s`` for others to share
        their transaction, so a process killed between enqueue and commit loses at most that
        window (50 ms) plus the commit in progress; the run then has no ``run_finished`` and crash
        recovery marks it interrupted.
        """
        if session_id in self._session_errors:
            raise self._lost(session_id)
        if events:
            self._submit(
                PendingAppend(session_id, list(events), run_id, task_id, before=before, queued_at=utcnow())
            )

    async def flush(self, session_id: str | None = None) -> None:
        """Wait until every queued event is committed.

        With ``session_id``, raise if that session's queued events could not be written: the run
        that owns the session learns it lost evidence, and no other caller is blamed for it.
        """
        while self._writer is not None and not self._writer.done():
            self._hurry_up()
            await asyncio.shield(self._writer)
        if session_id is not None and session_id in self._session_errors:
            raise self._lost(session_id)

    def _lost(self, session_id: str) -> StoreError:
        """The error of a session's lost events, reported once to whoever asks for that session."""
        error = self._session_errors.pop(session_id)
        kind = DatabaseUnreachable if is_connection_lost(error) else StoreError  # a worker resumes the first
        # The driver's words, never SQLAlchemy's dump of the statement and its parameters: those
        # are the events themselves (a task's text, a tool's result) and must not reach a log line.
        why = engines.describe_db_error(error, self.url) if isinstance(error, SQLAlchemyError) else str(error)
        return kind(f"events of session {session_id[:8]} could not be written: {why}")

    def _submit(self, item: PendingAppend) -> None:
        self._queue.append(item)
        if item.done is not None:
            self._hurry_up()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._drain_queue())

    async def _drain_queue(self) -> None:
        try:
            await self._drain()
        except BaseException as exc:
            # Cancelled (the loop is shutting down) or a bug: nobody will resolve the awaited
            # appends now, and their callers must not hang.
            for item in [*self._in_flight, *self._queue]:
                if item.done is not None and not item.done.done():
                    item.done.set_exception(StoreError(f"the event writer stopped: {exc!r}"))
            self._in_flight = []
            raise

    async def _drain(self) -> None:
        """Commit queued events; a busy database is retried, a bad item never sinks the others."""
        busy_retries = 0
        while self._queue:
            await self._gather()
            batch, self._queue = self._queue, []
            batch = self._in_flight = [item for item in batch if not self._behind_a_hole(item)]
            try:
                written = await self._commit(batch) if batch else []
            except Exception as exc:
                if is_busy(exc) and busy_retries < BUSY_RETRIES:
                    busy_retries += 1
                    self._queue[:0] = batch  # keep order: the failed batch goes first again
                    self._in_flight = []
                    if self.on_busy is not None:
                        self.on_busy(busy_retries)
                    await asyncio.sleep(0.05 * 2**busy_retries)
                    continue
                # Write item by item so one failing session cannot lose another session's events.
                for item in batch:
                    if self._behind_a_hole(item):
                        continue
                    try:
                        (records,) = await self._commit([item])
                    except Exception as item_exc:
                        if item.done is None:
                            self._session_errors.setdefault(item.session_id, item_exc)
                        elif not item.done.done():
                            item.done.set_exception(item_exc)
                    else:
                        _resolve(item, records)
                continue
            busy_retries = 0
            for item, records in zip(batch, written, strict=True):
                _resolve(item, records)
        self._in_flight = []

    async def _gather(self) -> None:
        """Let write-behind events wait up to ``write_behind_s`` so several turns share a commit.

        A plain future and a timer rather than an ``asyncio.Event``: the store outlives event loops
        in some callers, and an Event is bound to the first loop that waits on it.
        """
        if self.write_behind_s <= 0 or self._hurry:
            self._hurry = False
            return
        loop = asyncio.get_running_loop()
        window = self._window = loop.create_future()
        timer = loop.call_later(self.write_behind_s, _settle, window)
        try:
            await window
        finally:
            timer.cancel()
            self._window = None
            self._hurry = False

    def _hurry_up(self) -> None:
        self._hurry = True
        if self._window is not None:
            _settle(self._window)

    def _behind_a_hole(self, item: PendingAppend) -> bool:
        """Never write past lost events: later ones of that session wait for the owner to hear."""
        if item.session_id not in self._session_errors:
            return False
        if item.done is None:
            return True  # dropped; the recorded error still reaches the session's owner
        if not item.done.done():
            item.done.set_exception(self._lost(item.session_id))
        return True

    async def _commit(self, batch: list[PendingAppend]) -> list[list[EventRecord]]:
        """One transaction for the whole batch, through ``insert_events``."""
        now = utcnow()
        return await self._write_sync(lambda conn: _insert_batch(conn, batch, now, self.content_policy))

    async def _write_sync(self, work: Callable[[Connection], T], *, lock_first: bool = False) -> T:
        """One write transaction running ``work``: on SQLite in a worker thread, under ``_write_lock``,
        on a plain connection kept open between transactions (through aiosqlite each statement was
        a hop to its thread and back); elsewhere on the async write connection.

        ``lock_first`` takes SQLite's write lock before ``work``'s first statement, for work that
        reads what it then writes (the async write engine always does). Otherwise sqlite3 takes it
        before the first write, one statement fewer for the event writer's batches.
        """
        if self._thread_engine is not None:
            async with self._write_lock:
                return await asyncio.to_thread(self._in_thread, work, lock_first)
        async with self._write_conn() as conn:
            return await conn.run_sync(work)

    def _in_thread(self, work: Callable[[Connection], T], lock_first: bool) -> T:
        if self._thread_conn is None:
            assert self._thread_engine is not None
            self._thread_conn = self._thread_engine.connect()
        with self._thread_conn.begin():
            if lock_first:
                self._thread_conn.exec_driver_sql("BEGIN IMMEDIATE")
            return work(self._thread_conn)

    async def get_run_event_records(
        self, session_id: str, run_id: str, *, resolve: bool = True
    ) -> list[EventRecord]:
        """A run's events; ``resolve=False`` leaves chunked contents as the payload's ``content_ref``."""
        q = (
            select(EventRow)
            .where(EventRow.session_id == session_id, EventRow.run_id == run_id)
            .order_by(EventRow.seq)
        )
        await self.flush()
        return await self._resolved(await self._select_events(q), resolve)

    async def get_session_events(
        self,
        session_id: str,
        *,
        kinds: Sequence[str] | None = None,
        resolve: bool = True,
        flush: bool = True,
    ) -> list[EventRecord]:
        """The session's events in order. ``flush=False`` reads without waiting for this process's
        queued events (every session's) to commit: for a session the caller knows has none queued,
        so its read does not wait behind other sessions' writes."""
        q = select(EventRow).where(EventRow.session_id == session_id)
        if kinds:
            q = q.where(EventRow.kind.in_(list(kinds)))
        if flush:
            await self.flush()
        return await self._resolved(await self._select_events(q.order_by(EventRow.seq)), resolve)

    async def get_task_events(
        self,
        task_id: str,
        *,
        kinds: Sequence[str] | None = None,
        resolve: bool = True,
        payload_texts: bool = True,
    ) -> list[EventRecord]:
        """The task's events; ``payload_texts=False`` leaves a payload's chunked fields (an answer, a
        run's output) empty instead of reading them back, for readers of its other fields."""
        q = select(EventRow).where(EventRow.task_id == task_id)
        if kinds:
            q = q.where(EventRow.kind.in_(list(kinds)))
        await self.flush()
        return await self._resolved(
            await self._select_events(q.order_by(EventRow.id)), resolve, payload_texts=payload_texts
        )

    async def _select_events(self, query: Select[Any]) -> list[EventRecord]:
        """Event rows as records; on SQLite in one worker-thread hop instead of an async session."""
        if self._read_thread_engine is None:
            return await self._select(EventRecord, query)
        return await asyncio.to_thread(self._select_events_in_thread, query)

    def _select_events_in_thread(self, query: Select[Any]) -> list[EventRecord]:
        assert self._read_thread_engine is not None
        with self._database_errors(), self._read_thread_engine.connect() as conn:
            return [EventRecord.model_validate(row._mapping) for row in conn.execute(query)]

    async def task_spend(self, task_id: str) -> UsageTotals:
        """What a task has spent so far (``recorded_spend`` of its events), summed by the database.

        The agent loop asks this before every run that has a task budget: one aggregate row, so a
        task with a gigabyte of tool results never reads them (nor their events) to learn its spend.
        """
        response = EventRow.kind == EventKind.LLM_RESPONSE_RECEIVED
        usage = EventRow.payload[_USAGE]
        # Read as floats: PostgreSQL refuses to cast "12.0" to an integer, and a count is exact as a float.
        q = select(
            func.sum(
                case((response, 1.0), else_=func.coalesce(EventRow.payload[_LLM_CALLS].as_float(), 0.0))
            ),
            func.sum(func.coalesce(usage[_PROMPT_TOKENS].as_float(), 0.0)),
            func.sum(func.coalesce(usage[_COMPLETION_TOKENS].as_float(), 0.0)),
            func.sum(func.coalesce(usage[_COST_USD].as_float(), 0.0)),
        ).where(
            EventRow.task_id == task_id,
            EventRow.kind.in_([EventKind.LLM_RESPONSE_RECEIVED, EventKind.TASK_VALIDATION_SNAPSHOTTED]),
        )
        await self.flush()
        async with self._read() as s:
            calls, prompt, completion, cost = (await s.execute(q)).one()
        return UsageTotals(
            calls=int(calls or 0),
            prompt_tokens=int(prompt or 0),
            completion_tokens=int(completion or 0),
            cost_usd=float(cost or 0.0),
        )

    async def _resolved(
        self, records: list[EventRecord], resolve: bool, *, payload_texts: bool = True
    ) -> list[EventRecord]:
        """Chunked contents read back into ``content`` (the reference stays in the payload).

        A payload's own big fields (``offload_payload``: an answer, a run's output) are read back
        whatever ``resolve`` says: a reader of a payload expects its model's fields, and only the
        event's ``content`` has a reference that streaming readers know how to follow.
        """
        out: list[EventRecord] = []
        for record in records:
            if CHUNKED_PAYLOAD in record.payload:
                payload = (
                    await self.resolve_payload(record.payload)
                    if payload_texts
                    else {k: v for k, v in record.payload.items() if k != CHUNKED_PAYLOAD}
                    | dict.fromkeys(chunked_payload_refs(record.payload), "")
                )
                record = record.model_copy(update={"payload": payload})
            ref = record.payload.get(CONTENT_REF)
            if resolve and record.content is None and isinstance(ref, dict):
                text = await self.read_content(ContentRef.model_validate(ref))
                record = record.model_copy(update={"content": text})
            out.append(record)
        return out

    def _close_event_writer(self) -> None:
        if self._thread_conn is not None:
            self._thread_conn.close()
            self._thread_conn = None
        if self._thread_engine is not None:
            self._thread_engine.dispose()
        if self._read_thread_engine is not None:
            self._read_thread_engine.dispose()


def _settle(window: asyncio.Future[None]) -> None:
    if not window.done():
        window.set_result(None)


def _resolve(item: PendingAppend, records: list[EventRecord]) -> None:
    if item.done is not None and not item.done.done():
        item.done.set_result(records)
