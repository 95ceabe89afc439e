"""From the event log to evidence: the only way runs become ``RunEvidence``.

Evidence is rebuilt from transcript and tool events, never from request snapshots, so a compact
snapshot setting can never reduce what synthesis and validation see.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from core.domain.evidence import RunEvidence, ToolEvidence
from core.domain.facts import EventKind, FinishReason
from core.store import EventRecord, Store


def transcript_from_events(events: Sequence[EventRecord]) -> list[dict[str, Any]]:
    """The chat messages these events describe, in order, ready to send to a model again."""
    messages: list[dict[str, Any]] = []
    for ev in events:
        p = ev.payload
        if ev.kind == EventKind.RUN_STARTED:
            messages.extend(p.get("input_messages") or [])
        elif ev.kind == EventKind.LLM_RESPONSE_RECEIVED:
            msg: dict[str, Any] = {"role": "assistant", "content": p.get("content")}
            calls = p.get("tool_calls") or []
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in calls
                ]
            messages.append(msg)
        elif ev.kind == EventKind.TOOL_RESULT_RECORDED:
            message = {
                "role": "tool",
                "tool_call_id": p.get("tool_call_id"),
                "name": p.get("tool_name"),
                "content": ev.content or "",
            }
            if ev.content is None and isinstance(p.get("content_ref"), dict):
                message["content_ref"] = p["content_ref"]  # read unresolved: the text is in chunks
            messages.append(message)
        elif ev.kind in (EventKind.FINALIZATION_REQUESTED, EventKind.MESSAGE_ADDED):
            messages.append(p["message"])
        elif ev.kind == EventKind.OUTPUT_SCHEMA_REPAIRED and isinstance(p.get("output_text"), str):
            _replace_last_answer(messages, p["output_text"])
    return _drop_dangling_tool_calls(messages)


def settled_transcript(
    messages: Sequence[dict[str, Any]], repaired: str | None = None
) -> list[dict[str, Any]]:
    """A run's in-memory transcript as ``transcript_from_events`` would replay it from the log.

    The agent loop keeps the messages it sent and received (``RunOutcome.messages``) in the
    replay's shape; what the log adds after the run is applied here the same way: an answer the
    output-schema repair replaced (``repaired``), and tool calls that never got a result.
    """
    out = [dict(m) for m in messages]
    if repaired is not None:
        _replace_last_answer(out, repaired)
    return _drop_dangling_tool_calls(out)


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
    finished = False
    started_at = finished_at = None
    llm_calls = prompt_tokens = completion_tokens = 0
    for ev in events:
        if ev.kind == EventKind.RUN_STARTED:
            started_at = ev.created_at
        elif ev.kind == EventKind.LLM_RESPONSE_RECEIVED:
            llm_calls += 1
            usage = ev.payload.get("usage") or {}
            prompt_tokens += int(usage.get("prompt_tokens") or 0)
            completion_tokens += int(usage.get("completion_tokens") or 0)
        elif ev.kind == EventKind.TOOL_RESULT_RECORDED:
            p = ev.payload
            tool_results.append(
                ToolEvidence(
                    tool_name=str(p.get("tool_name", "")),
                    tool_call_id=p.get("tool_call_id"),
                    content=ev.content or "",
                    content_ref=p.get("content_ref") if ev.content is None else None,
                    event_payload=p,
                    url=p.get("url"),
                    title=p.get("title"),
                    created_at=ev.created_at,
                    is_error=bool(p.get("is_error", False)),
                )
            )
        elif ev.kind == EventKind.RUN_FINISHED:
            finished = True
            finished_at = ev.created_at
            finish_reason = str(ev.payload.get("finish_reason", ""))
            output_text = str(ev.payload.get("output_text") or "")
            warnings.extend(ev.payload.get("warnings") or [])
        elif ev.kind == EventKind.RUN_INTERRUPTED:
            interrupted = True
            warnings.append(str(ev.payload.get("message", "the run was interrupted")))
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
