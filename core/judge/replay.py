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
import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from core.domain.event_codec import decode_as, encode
from core.domain.event_payloads import ShadowVerdict
from core.domain.evidence import TaskEvidencePacket
from core.domain.facts import EventKind, FinishReason, WarningCode
from core.evidence.builder import settled_transcript, transcript_from_events
from core.evidence.packet import earlier_packets
from core.judge.candidates import Candidate
from core.llm import LLMGateway
from core.profiles import ModelRole
from core.store import AttemptRecord, Store
from core.store.judge_sql import SHADOW_SESSION_KIND, DecidedAttempt, decided_attempts, sessions_of_kind
from core.validation.service import INCOMPLETE_ANSWER, CaseInput, ValidationService
from core.validation.warnings import read_warnings
from core.workspace import Workspace

__all__ = [
    "ReplayProgress",
    "ReplaySelection",
    "ReplaySummary",
    "revalidate",
    "shadow_session",
    "shadow_verdicts",
]

log = logging.getLogger(__name__)
MAX_CONCURRENCY = 64


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


async def revalidate(
    ws: Workspace,
    candidate: Candidate,
    selection: ReplaySelection,
    *,
    concurrency: int = 4,
    on_progress: Callable[[ReplayProgress], None] | None = None,
) -> ReplaySummary:
    """Judge every selected decided attempt the candidate has not judged yet, and record each verdict."""
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be 1..{MAX_CONCURRENCY}, not {concurrency}")
    gateway = LLMGateway(candidate.settings)
    await gateway.check_ready([ModelRole.VALIDATOR])  # a missing key or script is refused up front
    store = ws.store
    decided = await decided_attempts(
        store, since=selection.since, batch_id=selection.batch_id, task_ids=selection.task_ids
    )
    decided_tasks = {d.task_id for d in decided}
    if selection.limit is not None:
        decided = decided[: selection.limit]
    session_id = await shadow_session(store, candidate, create=True)
    assert session_id is not None
    done = await shadow_verdicts(store, session_id)
    todo = [d for d in decided if d.attempt_id not in done]
    summary = ReplaySummary(
        candidate.name, candidate.version, session_id, len(decided), len(decided) - len(todo)
    )
    if selection.task_ids is not None:
        summary.not_decided = sorted(set(selection.task_ids) - decided_tasks)
    ctx = dataclasses.replace(ws.context, settings=candidate.settings, gateway=gateway)
    service = ValidationService(ctx, templates=candidate.templates)
    limit = asyncio.Semaphore(concurrency)
    counter = [summary.already_done]

    async def one(d: DecidedAttempt) -> None:
        async with limit:
            status = await _replay_one(store, service, candidate, d, session_id, summary)
        counter[0] += 1
        if on_progress is not None:
            on_progress(ReplayProgress(counter[0], len(decided), d.task_id, d.attempt_index, status))

    async with asyncio.TaskGroup() as group:
        for d in todo:
            group.create_task(one(d))
    return summary


async def _replay_one(
    store: Store,
    service: ValidationService,
    candidate: Candidate,
    decided: DecidedAttempt,
    session_id: str,
    summary: ReplaySummary,
) -> str:
    case, why = await case_from_store(store, service.settings.agent_model, decided)
    if case is None:
        summary.skipped.append({"task_id": decided.task_id, "attempt_id": decided.attempt_id, "reason": why})
        return "skipped"
    done = await service.assess(case, log_session_id=session_id)
    verdict = ShadowVerdict(
        **done.snapshot.model_dump(by_alias=True), candidate=candidate.name, task_id=decided.task_id
    )
    # No task on the row: the task's log, spend and verdict never see a shadow.
    await store.append_event(session_id, *encode(verdict), content=done.stored_prompt)
    status = str(done.report.result.status)
    summary.judged += 1
    summary.statuses[status] += 1
    return status


async def case_from_store(
    store: Store, default_agent_model: str, decided: DecidedAttempt
) -> tuple[CaseInput | None, str]:
    """The case the live validator judged, rebuilt from the store: packet, earlier packets, the task,
    and the conversation as the log replays it up to that attempt's verdict. None (and why) when
    the attempt has nothing to judge."""
    task = await store.get_task(decided.task_id)
    attempts = await store.list_attempts(task.id, resolve=False)
    attempt = next((a for a in attempts if a.id == decided.attempt_id), None)
    if attempt is None or not attempt.packet or task.main_session_id is None:
        return None, "the attempt recorded no evidence packet"
    try:
        packet = TaskEvidencePacket.model_validate(attempt.packet)
    except ValidationError as exc:
        return None, f"unreadable evidence packet: {exc.error_count()} error(s)"
    live = [v for v in await store.list_validations(task.id) if v.attempt_id == attempt.id]
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
    that attempt was never judged): what the live validator was shown as the conversation."""
    events = await store.get_session_events(session_id)
    cut = len(events)
    for position, ev in enumerate(events):
        if (
            ev.kind == EventKind.TASK_VALIDATION_SNAPSHOTTED
            and ev.payload.get("attempt_index") == attempt_index
        ):
            cut = position
            break
    return settled_transcript(transcript_from_events(events[:cut]))
