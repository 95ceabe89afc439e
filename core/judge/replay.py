"""Shadow replay: a candidate validator judges the stored evidence of decided attempts again.

Each verdict is a ``shadow_verdict_recorded`` event in the candidate's own shadow session (one
per exact validator version, labelled ``NAME@VERSION``) with no task on the event row: a replay
never moves a task, never writes a validation row, never touches a task's version, status or
place in the queue, and never counts in a task's spend.

Resuming is reading that session: an attempt with a shadow verdict there is done, so a replay
killed at any point and run again judges only what is left, and each verdict is one committed
event (never half of one). Verdicts run at most ``concurrency`` at a time; the candidate's model
calls go through the same gateway, budget, retries and fail-open rules as live validation, so a
provider fault becomes a ``validator_error`` shadow verdict exactly as it would be a live one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import text

from core.domain.event_codec import decode_as
from core.domain.event_payloads import ShadowVerdict
from core.domain.evidence import TaskEvidencePacket
from core.domain.facts import EventKind, FinishReason, WarningCode
from core.evidence.builder import settled_transcript, transcript_from_events
from core.evidence.packet import earlier_packets
from core.judge.candidates import Candidate
from core.llm import LLMGateway, before_sending
from core.profiles import ModelRole
from core.store import AttemptRecord, Store, new_event
from core.store.judge_sql import (
    SHADOW_SESSION_KIND,
    DecidedAttempt,
    case_rows,
    decided_attempts,
    has_shadow_verdict,
    sessions_of_kind,
)
from core.validation.context import previous_feedback
from core.validation.service import INCOMPLETE_ANSWER, CaseInput, ValidationService
from core.validation.warnings import read_warnings
from core.workspace import Workspace

__all__ = [
    "ALREADY_JUDGED",
    "SKIPPED",
    "ReplayProgress",
    "ReplaySelection",
    "ReplaySummary",
    "Replayer",
    "revalidate",
    "select_todo",
    "shadow_session",
    "shadow_verdicts",
]

log = logging.getLogger(__name__)
MAX_CONCURRENCY = 64
SKIPPED = "skipped"  # the attempt has nothing to judge
ALREADY_JUDGED = "already judged"  # the session holds its verdict


@dataclass(frozen=True, slots=True)
class ReplaySelection:
    """Which decided attempts to replay: all (``task_ids`` None), or those of the named tasks."""

    task_ids: Sequence[str] | None = None
    since: datetime | None = None
    batch_id: str | None = None
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class ReplayProgress:
    done: int
    total: int
    task_id: str
    attempt_index: int
    status: str  # the shadow verdict's status, or "skipped"


@dataclass
class ReplaySummary:
    candidate: str
    validator_version: str
    session_id: str
    selected: int = 0
    already_done: int = 0
    judged: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)  # attempts with nothing to judge, and why
    not_decided: list[str] = field(default_factory=list)  # named tasks with no decided attempt
    statuses: Counter[str] = field(default_factory=Counter)

    def as_json(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "statuses": dict(self.statuses)}


async def shadow_session(store: Store, candidate: Candidate, *, create: bool) -> str | None:
    """The id of the candidate's shadow session (created when asked and missing)."""
    found = await sessions_of_kind(store, SHADOW_SESSION_KIND, candidate.session_label)
    if found:
        return found[0].id
    if not create:
        return None
    return (
        await store.create_session(task_id=None, kind=SHADOW_SESSION_KIND, label=candidate.session_label)
    ).id


async def shadow_verdicts(store: Store, session_id: str) -> dict[str, ShadowVerdict]:
    """The session's shadow verdicts by attempt id (the first of each: a replay never writes two)."""
    out: dict[str, ShadowVerdict] = {}
    events = await store.get_session_events(
        session_id, kinds=[EventKind.SHADOW_VERDICT_RECORDED], resolve=False
    )
    for ev in events:
        verdict = decode_as(ev, ShadowVerdict)
        if verdict.attempt_id is not None:
            out.setdefault(verdict.attempt_id, verdict)
    return out


class Replayer:
    """What one replay builds once and judges many attempts with: the candidate's gateway and
    validation service and its shadow session. A worker keeps one per candidate version, so a job
    pays for none of it."""

    def __init__(self, ws: Workspace, candidate: Candidate, session_id: str, *, shared: bool) -> None:
        self.store = ws.store
        self.shared = shared  # other processes may judge the same attempts (workers' jobs)
        # Queue each verdict for the event writer instead of waiting for its commit (``revalidate``
        # alone, which flushes before it returns): see ``revalidate``.
        self.write_behind = False
        self.candidate = candidate
        self.session_id = session_id
        ctx = dataclasses.replace(
            ws.context, settings=candidate.settings, gateway=LLMGateway(candidate.settings)
        )
        self.service = ValidationService(ctx, templates=candidate.templates)

    @classmethod
    async def open(cls, ws: Workspace, candidate: Candidate, *, shared: bool | None = None) -> Replayer:
        """Ready to judge: a missing key or script is refused here, before anything is judged.

        ``shared`` (default: on PostgreSQL) checks for a stored verdict before judging and again
        before writing; one process replaying alone chose only attempts with none.
        """
        self = cls(ws, candidate, "", shared=not ws.store.is_sqlite if shared is None else shared)
        await self.service.gateway.check_ready([ModelRole.VALIDATOR])
        session_id = await shadow_session(ws.store, candidate, create=True)
        assert session_id is not None
        self.session_id = session_id
        return self

    async def judge(self, task_id: str, attempt_id: str, attempt_index: int) -> tuple[str, str]:
        """Judge one attempt and record the verdict, unless the session holds one already.

        Returns the verdict's status (or "skipped", "already judged") and why it was skipped. The
        check is made again just before writing, under a lock every process takes: a job retried
        while its first body still ran judges twice at worst, but stores one verdict.
        """
        shared = self.shared
        if shared and await has_shadow_verdict(self.store, self.session_id, attempt_id):
            return ALREADY_JUDGED, ""
        case, why = await case_from_store(
            self.store, self.service.settings.agent_model, task_id, attempt_id, attempt_index
        )
        if case is None:
            return SKIPPED, why
        done = await self.service.assess(case, log_session_id=self.session_id)
        verdict = ShadowVerdict(
            **done.snapshot.model_dump(by_alias=True), candidate=self.candidate.name, task_id=task_id
        )
        async with self._only_writer(attempt_id):
            if shared and await has_shadow_verdict(self.store, self.session_id, attempt_id):
                return ALREADY_JUDGED, ""
            # No task on the row: the task's log, spend and verdict never see a shadow. No record
            # is read back: nobody uses it.
            event = new_event(verdict, content=done.stored_prompt)
            if self.write_behind:
                self.store.enqueue_events(self.session_id, [event])
            else:
                await self.store.commit_events(self.session_id, [event])
        return str(done.report.result.status), ""

    @contextlib.asynccontextmanager
    async def _only_writer(self, attempt_id: str) -> AsyncIterator[None]:
        """One writer of the attempt's verdict at a time, on PostgreSQL: an advisory lock held on a
        connection of its own until the verdict is committed. It is a connection's lock, so it
        keeps out a coroutine of this process as well as another worker. SQLite has no workers:
        one process replays, and its attempts are distinct."""
        if self.store.is_sqlite:
            yield
            return
        key = _lock_key(f"shadow:{self.session_id}:{attempt_id}")
        async with self.store.engine.connect() as conn:
            await conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
            try:
                yield
            finally:
                await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})


def _lock_key(name: str) -> int:
    """A signed 64-bit advisory lock key for ``name``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


async def select_todo(
    store: Store, session_id: str, selection: ReplaySelection
) -> tuple[list[DecidedAttempt], list[DecidedAttempt], list[str]]:
    """The selected decided attempts, those of them not judged yet, and named tasks not decided."""
    decided = await decided_attempts(
        store, since=selection.since, batch_id=selection.batch_id, task_ids=selection.task_ids
    )
    decided_tasks = {d.task_id for d in decided}
    if selection.limit is not None:
        decided = decided[: selection.limit]
    done = await shadow_verdicts(store, session_id)
    todo = [d for d in decided if d.attempt_id not in done]
    missing = sorted(set(selection.task_ids) - decided_tasks) if selection.task_ids is not None else []
    return decided, todo, missing


async def revalidate(
    ws: Workspace,
    candidate: Candidate,
    selection: ReplaySelection,
    *,
    concurrency: int = 4,
    on_progress: Callable[[ReplayProgress], None] | None = None,
) -> ReplaySummary:
    """Judge every selected decided attempt the candidate has not judged yet, and record each verdict.

    Alone on its attempts (not ``shared``: one process on SQLite), the verdicts are written behind:
    each waits up to the event writer's window for others to share its commit, and no verdict
    waits for its own, so the verdicts in flight do not queue behind each other's commits. A kill
    loses at most the verdicts of that window, which the next run judges again (an attempt is
    done when its verdict is stored, so none is stored twice); the replay returns only once every
    verdict is committed, and raises if one could not be.
    """
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be 1..{MAX_CONCURRENCY}, not {concurrency}")
    replayer = await Replayer.open(ws, candidate)
    replayer.write_behind = not replayer.shared
    decided, todo, missing = await select_todo(ws.store, replayer.session_id, selection)
    summary = ReplaySummary(
        candidate.name, candidate.version, replayer.session_id, len(decided), len(decided) - len(todo)
    )
    summary.not_decided = missing
    limit = asyncio.Semaphore(concurrency)
    turn = _Turn()
    counter = [summary.already_done]

    async def one(d: DecidedAttempt) -> None:
        async with limit, turn.taken() as release:
            with before_sending(release):
                status, why = await replayer.judge(d.task_id, d.attempt_id, d.attempt_index)
        if status == SKIPPED:
            summary.skipped.append({"task_id": d.task_id, "attempt_id": d.attempt_id, "reason": why})
        elif status == ALREADY_JUDGED:
            summary.already_done += 1
        else:
            summary.judged += 1
            summary.statuses[status] += 1
        counter[0] += 1
        if on_progress is not None:
            on_progress(ReplayProgress(counter[0], len(decided), d.task_id, d.attempt_index, status))

    async with asyncio.TaskGroup() as group:
        for d in todo:
            group.create_task(one(d))
    await ws.store.flush(replayer.session_id)
    return summary


class _Turn:
    """Verdicts take turns doing their local work (case read, rendering, token counts) up to their
    model call, one after another in arrival order, and overlap only while waiting on the model.

    Left to the loop's round-robin, the verdicts in flight interleave their work and finish it at
    about the same time, so their calls go out, come back and start the next verdicts in lockstep:
    at concurrency ``c`` each verdict waited for the others' work as well as its own, every round
    (the replay fell to ~0.8 of the ideal at 4, ~0.65 at 8). Taken in turn, the first call goes
    out after one verdict's work, the next one verdict's work later, and so on: the calls stay
    staggered, and a verdict's work rarely meets another's."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()  # FIFO: waiters are woken in arrival order

    @contextlib.asynccontextmanager
    async def taken(self) -> AsyncIterator[Callable[[], None]]:
        """Hold the turn until the returned callback (idempotent) is called, or the block ends."""
        await self._lock.acquire()
        held = [True]

        def release() -> None:
            if held[0]:
                held[0] = False
                self._lock.release()

        try:
            yield release
        finally:
            release()


async def case_from_store(
    store: Store, default_agent_model: str, task_id: str, attempt_id: str, attempt_index: int
) -> tuple[CaseInput | None, str]:
    """The case the live validator judged, rebuilt from the store: packet, earlier packets, the task,
    and the conversation as the log replays it up to that attempt's verdict. None (and why) when
    the attempt has nothing to judge."""
    rows = await case_rows(store, task_id)
    task, attempts = rows.task, rows.attempts
    attempt = next((a for a in attempts if a.id == attempt_id and a.index == attempt_index), None)
    if attempt is None or not attempt.packet or task.main_session_id is None:
        return None, "the attempt recorded no evidence packet"
    try:
        packet = TaskEvidencePacket.model_validate(attempt.packet)
    except ValidationError as exc:
        return None, f"unreadable evidence packet: {exc.error_count()} error(s)"
    validations = rows.validations
    live = [v for v in validations if v.attempt_id == attempt.id]
    debug = live[-1].debug if live else {}
    history = await _history_before_verdict(store, task.main_session_id, attempt.index)
    case = CaseInput(
        packet=packet,
        task_text=task.text,
        history=history,
        task_id=task.id,
        attempt_id=attempt.id,
        attempt_index=attempt.index,
        session_id=task.main_session_id,
        agent_model=str(debug.get("agent_model") or default_agent_model),
        pending_tool_calls=debug.get("strategy") == "pre-check:pending-tool-calls",
        truncated=_truncation(attempt, debug),
        earlier=await _earlier(store, attempts, attempt.index),
        feedback_text=previous_feedback(
            validations,
            rows.feedback,
            attempt_index=attempt.index,
            attempt_ids={a.id: a.index for a in attempts},
        ),
    )
    return case, ""


def _truncation(attempt: AttemptRecord, debug: dict[str, Any]) -> str | None:
    """How the attempt's answer was cut off, as the live verdict was told (the output limit, or a
    stream the server ended early); None for a whole answer. The live verdict's warning keeps the
    words; an attempt judged before it had them is taken to have hit the output limit."""
    if attempt.finish_reason != FinishReason.TRUNCATED:
        return None
    for warning in read_warnings(debug):
        if warning.code == WarningCode.TRUNCATED_ANSWER and warning.message.endswith(INCOMPLETE_ANSWER):
            return warning.message.removesuffix(INCOMPLETE_ANSWER)
    return "the answer was cut off at the model's output token limit (finish_reason=length)"


async def _earlier(store: Store, attempts: list[AttemptRecord], index: int) -> list[TaskEvidencePacket]:
    """The earlier attempts' packets, indexed, from the attempts already read (most tasks have none)."""
    if not any(a.index < index and a.packet for a in attempts):
        return []
    return await earlier_packets(store, attempts[0].task_id, index)


async def _history_before_verdict(store: Store, session_id: str, attempt_index: int) -> list[dict[str, Any]]:
    """The session's transcript up to the live verdict of ``attempt_index`` (the whole session when
    that attempt was never judged): what the live validator was shown as the conversation.

    Not flushed first: the task was decided, so this session's events up to the verdict were
    committed before the analyst's decision was, and the replay's own queued verdicts (another
    session) need not be committed for this read."""
    events = await store.get_session_events(session_id, flush=False)
    cut = len(events)
    for position, ev in enumerate(events):
        if (
            ev.kind == EventKind.TASK_VALIDATION_SNAPSHOTTED
            and ev.payload.get("attempt_index") == attempt_index
        ):
            cut = position
            break
    return settled_transcript(transcript_from_events(events[:cut]))
