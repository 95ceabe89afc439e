"""From the event log to evidence: the only way runs become ``RunEvidence``.

Evidence is rebuilt from transcript and tool events, never from request snapshots, so a compact
snapshot setting can never reduce what synthesis and validation see.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from core.domain.event_codec import decode, decode_as
from core.domain.event_payloads import (
    AddedMessage,
    FinalizationRequest,
    LlmResponse,
    RunEnd,
    RunInterruption,
    RunStart,
    SchemaRepair,
    ToolResultRecord,
)
from core.domain.evidence import RunEvidence, ToolEvidence
from core.domain.facts import EventKind, FinishReason
from core.store import EventRecord, Store


def transcript_from_events(events: Sequence[EventRecord]) -> list[dict[str, Any]]:
    """The chat messages these events describe, in order, ready to send to a model again."""
    messages: list[dict[str, Any]] = []
    for ev in events:
        if ev.kind not in _TRANSCRIPT_KINDS:
            continue  # snapshots and the task's moves say nothing to the model: not decoded
        p = decode(ev)
        if isinstance(p, RunStart):
            messages.extend(p.input_messages)
        elif isinstance(p, LlmResponse):
            msg: dict[str, Any] = {"role": "assistant", "content": p.content}
            if p.tool_calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in p.tool_calls
                ]
            messages.append(msg)
        elif isinstance(p, ToolResultRecord):
            message: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": p.tool_call_id,
                "name": p.tool_name,
                "content": ev.content or "",
            }
            if ev.content is None and p.content_ref is not None:
                message["content_ref"] = p.content_ref.model_dump()  # read unresolved: the text is in chunks
            messages.append(message)
        elif isinstance(p, (FinalizationRequest, AddedMessage)):
            messages.append(p.message)
        elif isinstance(p, SchemaRepair) and p.output_text is not None:
            _replace_last_answer(messages, p.output_text)
    return _drop_dangling_tool_calls(messages)


def settled_transcript(
    messages: Sequence[dict[str, Any]], repaired: str | None = None
) -> list[dict[str, Any]]:
    """A run's in-memory transcript as ``transcript_from_events`` would replay it from the log.

    The agent loop keeps the messages it sent and received (``RunOutcome.messages``) in the
    replay's shape; what the log adds after the run is applied here the same way: an answer the
    output-schema repair replaced (``repaired``), and tool calls that never got a result.
    """
    out = list(messages)  # neither step changes a message in place: a changed one is a new dict
    if repaired is not None:
        _replace_last_answer(out, repaired)
    return _drop_dangling_tool_calls(out)


_TRANSCRIPT_KINDS = frozenset(
    {
        EventKind.RUN_STARTED,
        EventKind.LLM_RESPONSE_RECEIVED,
        EventKind.TOOL_RESULT_RECORDED,
        EventKind.FINALIZATION_REQUESTED,
        EventKind.MESSAGE_ADDED,
        EventKind.OUTPUT_SCHEMA_REPAIRED,
    }
)


def _replace_last_answer(messages: list[dict[str, Any]], accepted: str) -> None:
    """Seed 003: memory sees only the accepted exchange, so a repaired answer replaces the rejected
    one in the replayed conversation (the rejected text stays in its own event for the audit)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant" and not messages[index].get("tool_calls"):
            messages[index] = {**messages[index], "content": accepted}
            return


def _drop_dangling_tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run killed between a tool request and its results leaves calls with no answers.

    Providers reject such a history, so calls without results are removed from the replayed
    transcript (the events themselves stay untouched).
    """
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    out: list[dict[str, Any]] = []
    for m in messages:
        calls = m.get("tool_calls")
        if calls and any(c["id"] not in answered for c in calls):
            kept = [c for c in calls if c["id"] in answered]
            m = {**m}
            if kept:
                m["tool_calls"] = kept
            else:
                m.pop("tool_calls")
                if not m.get("content"):
                    continue
        out.append(m)
    return out


def run_evidence_from_events(run_id: str, session_id: str, events: Sequence[EventRecord]) -> RunEvidence:
    tool_results: list[ToolEvidence] = []
    finish_reason = ""
    output_text = ""
    warnings: list[str] = []
    interrupted = False  # recovery recorded that the process running it died
    tools_ignored = False
    finished = False
    started_at = finished_at = None
    llm_calls = prompt_tokens = completion_tokens = 0
    for ev in events:
        if ev.kind == EventKind.RUN_STARTED:
            started_at = ev.created_at
        elif ev.kind == EventKind.LLM_RESPONSE_RECEIVED:
            llm_calls += 1
            usage = decode_as(ev, LlmResponse).usage
            prompt_tokens += usage.prompt_tokens
            completion_tokens += usage.completion_tokens
        elif ev.kind == EventKind.TOOL_RESULT_RECORDED:
            result = decode_as(ev, ToolResultRecord)
            tool_results.append(
                ToolEvidence(
                    tool_name=result.tool_name,
                    tool_call_id=result.tool_call_id,
                    content=ev.content or "",
                    content_ref=result.content_ref if ev.content is None else None,
                    event_payload=ev.payload,  # as stored: the packet keeps the audit's exact record
                    url=result.url,
                    title=result.title,
                    created_at=ev.created_at,
                    is_error=result.is_error,
                )
            )
        elif ev.kind == EventKind.RUN_FINISHED:
            end = decode_as(ev, RunEnd)
            finished = True
            finished_at = ev.created_at
            finish_reason = str(end.finish_reason)
            output_text = end.output_text
            warnings.extend(end.warnings)
            tools_ignored = bool(end.tools_ignored)
        elif ev.kind == EventKind.RUN_INTERRUPTED:
            interrupted = True
            warnings.append(decode_as(ev, RunInterruption).message)
    if not finished:
        finish_reason = finish_reason or FinishReason.INTERRUPTED
        if not interrupted:
            warnings.append("the run never recorded its end (the process was interrupted)")
    return RunEvidence(
        run_id=run_id,
        session_id=session_id,
        output_text=output_text,
        finish_reason=finish_reason,
        transcript=transcript_from_events(events),
        tool_results=tool_results,
        warnings=warnings,
        tools_ignored=tools_ignored,
        duration_s=_seconds_between(started_at, finished_at),
        llm_calls=llm_calls,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def _seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round(max((end - start).total_seconds(), 0.0), 3)


async def build_run_evidence(
    store: Store, session_id: str, run_id: str, *, resolve: bool = True
) -> RunEvidence:
    """Evidence of one run; works for runs that ended by budget, cancellation, error or crash.

    ``resolve=False`` keeps chunked tool results as references (``content_ref``): the packet
    builder stores them as they are instead of reading gigabytes back only to store them again.
    """
    events = await store.get_run_event_records(session_id, run_id, resolve=resolve)
    return run_evidence_from_events(run_id, session_id, events)


async def session_messages(store: Store, session_id: str) -> list[dict[str, Any]]:
    """Everything the session has said so far, to continue it in a new attempt."""
    return transcript_from_events(await store.get_session_events(session_id))
