"""Tokens and cost of a task's recorded calls, per attempt and in total.

Sums of what each call recorded when it was made (its response event's ``usage``, a validation's
``debug.usage``), so ``show``, the desk and the report agree and nothing is re-priced on reading.
Every answered call counts once: agent turns (``llm_response_received``), a turn cut off at
``max_tokens`` and retried (its ``llm_call_failed`` carries the usage), the planner's and an output
schema's calls (``model_calls_recorded``) and each validation's calls, a timed-out one included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from core.domain.event_codec import EventPayloadError, decode_as, readable_debug
from core.domain.event_payloads import (
    LlmCallFailure,
    LlmResponse,
    ModelCallsRecord,
    RunStart,
    TokenUsage,
    ValidationSnapshot,
)
from core.domain.facts import EventKind
from core.domain.records import AttemptRecord, EventRecord, ValidationRecord

USAGE_EVENT_KINDS: tuple[str, ...] = (
    EventKind.RUN_STARTED,
    EventKind.LLM_RESPONSE_RECEIVED,
    EventKind.LLM_CALL_FAILED,
    EventKind.MODEL_CALLS_RECORDED,
)
"""The events per-attempt totals are read from: a reader may load just these, not the evidence."""


class UsageTotals(BaseModel):
    """Tokens and cost of a set of calls (a run, an attempt, a task)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # calls whose model had no known price

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def known_cost_usd(self) -> float | None:
        """The cost, or None when calls were made and none of them had a known price."""
        return None if self.calls > 0 and self.unpriced_calls >= self.calls else self.cost_usd

    def add(self, usage: dict[str, Any] | None, calls: int = 1) -> None:
        usage = usage or {}
        self.calls += calls
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        self.cost_usd += float(usage.get("cost_usd") or 0.0)
        self.unpriced_calls += int(usage.get("unpriced_calls") or 0)

    def add_usage(self, usage: TokenUsage, calls: int = 1) -> None:
        """Add one recorded usage (a response event's, a validation's) and the calls it paid for."""
        self.calls += calls
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cost_usd += usage.cost_usd
        self.unpriced_calls += usage.unpriced_calls or 0

    def plus(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
        )

    def summary(self) -> str:
        """One line for headers and reports: "1,234 tokens (1,000 in, 234 out) · $0.0012"; the cost
        is "cost unknown" when no call was priced, and names the calls left out when some were not."""
        known = self.known_cost_usd
        if known is None:
            cost = "cost unknown"
        elif self.unpriced_calls:
            cost = f"${known:.4f} + {self.unpriced_calls} unpriced call(s)"
        else:
            cost = f"${known:.4f}"
        return f"{self.tokens:,} tokens ({self.prompt_tokens:,} in, {self.completion_tokens:,} out) · {cost}"


def events_usage(events: Iterable[EventRecord]) -> UsageTotals:
    """Sum of the model calls recorded in ``events`` outside validations: agent turns, cut-off
    turns that were retried, the planner's and an output schema's calls."""
    totals = UsageTotals()
    for ev in events:
        _add_event(totals, ev)
    return totals


def _add_event(totals: UsageTotals, ev: EventRecord) -> None:
    """One usage-carrying event (of ``USAGE_EVENT_KINDS``) added; others are ignored."""
    if ev.kind == EventKind.LLM_RESPONSE_RECEIVED:
        _add_response(totals, ev)
    elif ev.kind == EventKind.LLM_CALL_FAILED:
        try:
            failed = decode_as(ev, LlmCallFailure).usage
        except EventPayloadError:
            return
        if failed is not None:  # a reply that came back (cut off at max_tokens) and was paid for
            totals.add_usage(failed)
    elif ev.kind == EventKind.MODEL_CALLS_RECORDED:
        try:
            record = decode_as(ev, ModelCallsRecord)
        except EventPayloadError:
            return
        totals.add_usage(record.usage, calls=record.calls)


def _attempt_of_record(ev: EventRecord) -> str | None:
    if ev.kind != EventKind.MODEL_CALLS_RECORDED:
        return None
    try:
        return decode_as(ev, ModelCallsRecord).attempt_id
    except EventPayloadError:
        return None


def _add_response(totals: UsageTotals, ev: EventRecord) -> None:
    """One model call's usage; a damaged response event still was a call, of unknown tokens."""
    try:
        usage = decode_as(ev, LlmResponse).usage
    except EventPayloadError:
        totals.add(None)
        return
    totals.add_usage(usage)


def validation_usage(validation: ValidationRecord) -> UsageTotals:
    """What a validation's calls used. A debug row that does not read as its model (damaged, or
    from a version with other types) still gives what of its usage reads: a task's totals must
    not fail on one odd row."""
    totals = UsageTotals()
    debug = readable_debug(validation)
    if debug is not None:
        totals.add_usage(debug.usage, calls=debug.llm_calls)
        return totals
    usage, calls = validation.debug.get("usage"), validation.debug.get("llm_calls")
    totals.add(usage if isinstance(usage, dict) else None, calls=calls if isinstance(calls, int) else 0)
    return totals


def attempt_usage(
    attempts: Sequence[AttemptRecord], validations: Sequence[ValidationRecord], events: Sequence[EventRecord]
) -> dict[int, UsageTotals]:
    """Per attempt index: the agent's calls (every run the attempt started) plus its validations."""
    run_attempt: dict[str, str] = {}
    for ev in events:
        if ev.kind == EventKind.RUN_STARTED and ev.run_id is not None:
            try:
                attempt_id = decode_as(ev, RunStart).attempt_id
            except EventPayloadError:  # a damaged start: its run's calls count for the task only
                continue
            if attempt_id is not None:
                run_attempt[ev.run_id] = attempt_id
    by_id = {a.id: a.index for a in attempts}
    totals = {a.index: UsageTotals() for a in attempts}
    for ev in events:
        attempt_id = run_attempt.get(ev.run_id, "") if ev.run_id is not None else _attempt_of_record(ev)
        index = by_id.get(attempt_id or "")
        if index is not None:
            _add_event(totals[index], ev)
    for v in validations:
        if v.attempt_index in totals:
            totals[v.attempt_index] = totals[v.attempt_index].plus(validation_usage(v))
    return totals


def recorded_spend(events: Iterable[EventRecord]) -> UsageTotals:
    """What a task has spent so far, from its events alone: agent calls and validation snapshots.

    The agent loop checks a task budget against this at the start of each run, so a retry or a
    revision continues from what the earlier attempts used.
    """
    totals = UsageTotals()
    for ev in events:
        if ev.kind == EventKind.TASK_VALIDATION_SNAPSHOTTED:
            snapshot = decode_as(ev, ValidationSnapshot)
            if snapshot.node_id is None:  # a node's verdict is counted by its ModelCallsRecord
                totals.add_usage(snapshot.usage, calls=snapshot.llm_calls)
        else:
            _add_event(totals, ev)
    return totals


def task_usage(
    attempts: Sequence[AttemptRecord], validations: Sequence[ValidationRecord], events: Sequence[EventRecord]
) -> UsageTotals:
    """Everything the task's recorded calls used: every run's calls and every validation's."""
    totals = events_usage(events)
    for v in validations:
        totals = totals.plus(validation_usage(v))
    return totals


__all__ = [
    "USAGE_EVENT_KINDS",
    "UsageTotals",
    "attempt_usage",
    "events_usage",
    "recorded_spend",
    "task_usage",
    "validation_usage",
]
