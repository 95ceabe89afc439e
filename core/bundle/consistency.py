"""The task snapshot in a bundle, checked against the task's own hash-chained events.

``task.json``, ``validations.json`` and ``attempts.json`` are snapshots of rows; the event log is
the record of how those rows came to be, and every status move and every validator verdict is
written into it in the same transaction as the row. Someone who edits a snapshot and recomputes the
manifest (so every entry hash matches again) still leaves the snapshot contradicting the chained
log: a status the last status event did not move to, a score no validation event recorded.

Checks apply when the log holds the events in question; tasks built by hand or by older tools
without them are left to the hashes (and to the signature: a forger who rewrites the chains too is
caught only there).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Protocol

from core.bundle.format import events_entry, jsonl_lines, task_entry
from core.domain.event_codec import payload_key
from core.domain.event_payloads import AnalystDecision, StatusChange, TaskInterruption, ValidationSnapshot
from core.domain.facts import EventKind
from core.domain.validation import ValidationResult

__all__ = ["check_snapshots"]

STATUS_KINDS = {
    EventKind.TASK_STATUS_CHANGED.value,
    EventKind.TASK_INTERRUPTED.value,
    EventKind.ANALYST_FEEDBACK_RECORDED.value,
}
SNAPSHOT = EventKind.TASK_VALIDATION_SNAPSHOTTED.value
# The only events these checks read: a streaming verifier keeps these and drops the rest.
KEPT_KINDS = frozenset({*STATUS_KINDS, SNAPSHOT})
# A bundle is checked as the JSON it holds (which keys are present matters, so payloads are not
# decoded into models with defaults), but the keys come from the models that write them.
_TO = payload_key(StatusChange, "to_status")
assert _TO == payload_key(TaskInterruption, "to_status") == payload_key(AnalystDecision, "to_status")
_OUTCOME = payload_key(StatusChange, "validation_outcome")
_RESULT = payload_key(ValidationSnapshot, "result")
_STATUS = payload_key(ValidationSnapshot, "status")
_SKIPPED = payload_key(ValidationSnapshot, "skipped")
_SCORE = "score"
assert _SCORE in ValidationResult.model_fields


class _Report(Protocol):
    def add(self, message: str, rank: int = ...) -> None: ...


def _load(contents: dict[str, bytes], name: str) -> Any:
    blob = contents.get(name)
    if blob is None:
        return None
    try:
        return json.loads(blob)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None  # reported by the structural checks


def _events_by_task(
    manifest: dict[str, Any], contents: dict[str, bytes], kept: dict[str, list[dict[str, Any]]]
) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for session_id in manifest["chains"]:
        if str(session_id) in kept:
            for event in kept[str(session_id)]:
                found[str(event["task_id"])].append(event)
            continue
        blob = contents.get(events_entry(str(session_id)))
        if blob is None:
            continue
        for line in jsonl_lines(blob.decode("utf-8", errors="replace")):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and isinstance(event.get("payload"), dict) and event.get("task_id"):
                found[str(event["task_id"])].append(event)
    for events in found.values():
        events.sort(
            key=lambda e: (str(e.get("created_at")), e.get("seq") if isinstance(e.get("seq"), int) else 0)
        )
    return found


def _where(event: dict[str, Any]) -> str:
    return f"{event.get('kind')} at seq {event.get('seq')} of session {event.get('session_id')}"


def _verdict(payload: dict[str, Any]) -> tuple[Any, Any]:
    result = payload.get(_RESULT)
    return payload.get(_STATUS), result.get(_SCORE) if isinstance(result, dict) else None


def _check_status(entry: str, task: dict[str, Any], events: list[dict[str, Any]], report: _Report) -> None:
    moves = [e for e in events if e.get("kind") in STATUS_KINDS and _TO in e["payload"]]
    if not moves:
        return
    last = moves[-1]
    if task.get("status") != last["payload"][_TO]:
        report.add(
            f"{entry}: status {task.get('status')!r} contradicts the chained log, whose last status event "
            f"({_where(last)}) moved the task to {last['payload'][_TO]!r} (task snapshot changed)",
            0,
        )
    decided = [i for i, e in enumerate(moves) if _OUTCOME in e["payload"]]
    interrupted_after = decided and any(
        e.get("kind") == EventKind.TASK_INTERRUPTED.value for e in moves[decided[-1] + 1 :]
    )
    if decided and not interrupted_after:
        event = moves[decided[-1]]
        expected = event["payload"][_OUTCOME]
        if task.get("validation_outcome") != expected:
            report.add(
                f"{entry}: validation outcome {task.get('validation_outcome')!r} contradicts the chained log, "
                f"which last recorded {expected!r} ({_where(event)}) (task snapshot changed)",
                0,
            )


def _check_verdicts(
    task_id: str,
    task: dict[str, Any],
    snapshots: list[dict[str, Any]],
    contents: dict[str, bytes],
    report: _Report,
) -> None:
    judged = [s["payload"] for s in snapshots if not s["payload"].get(_SKIPPED)]
    verdicts = {_verdict(p) for p in judged} | {(None, None)}
    latest = (task.get("latest_validation_status"), task.get("latest_score"))
    if latest not in verdicts:
        report.add(
            f"{task_entry(task_id, 'task.json')}: latest verdict {latest[0]!r} score {latest[1]!r} matches no "
            f"{SNAPSHOT} event in the chained log (task snapshot changed)",
            0,
        )
    name = task_entry(task_id, "validations.json")
    validations = _load(contents, name)
    for v in validations if isinstance(validations, list) else []:
        if not isinstance(v, dict):
            continue
        if not any(
            p.get("attempt_index") == v.get("attempt_index")
            and p.get("status") == v.get("status")
            and p.get("result") == v.get("result")
            and p.get("raw_response") == v.get("raw_response")
            for p in judged
        ):
            score = v.get("result", {}).get("score") if isinstance(v.get("result"), dict) else None
            report.add(
                f"{name}: attempt {v.get('attempt_index')}'s validation (status {v.get('status')!r}, score "
                f"{score!r}) matches no {SNAPSHOT} event in the chained log (verdict changed)",
                0,
            )
    name = task_entry(task_id, "attempts.json")
    attempts = _load(contents, name)
    for a in attempts if isinstance(attempts, list) else []:
        if not isinstance(a, dict) or a.get("validation_status") is None:
            continue
        mine = {_verdict(p) for p in judged if p.get("attempt_index") == a.get("index")}
        if (a.get("validation_status"), a.get("validation_score")) not in mine:
            report.add(
                f"{name}: attempt {a.get('index')}'s verdict {a.get('validation_status')!r} score "
                f"{a.get('validation_score')!r} matches no {SNAPSHOT} event for it (verdict changed)",
                0,
            )


def check_snapshots(
    manifest: dict[str, Any],
    contents: dict[str, bytes],
    report: _Report,
    kept: dict[str, list[dict[str, Any]]] | None = None,
) -> None:
    """Compare each task's snapshot entries with the status and validation events chained in the bundle.

    ``kept``: per session id, the ``KEPT_KINDS`` events of a log checked while streaming (so not
    in ``contents``).
    """
    by_task = _events_by_task(manifest, contents, kept or {})
    for raw_id in manifest["task_ids"]:
        task_id = str(raw_id)
        entry = task_entry(task_id, "task.json")
        task = _load(contents, entry)
        if not isinstance(task, dict):
            continue
        events = by_task.get(task_id, [])
        _check_status(entry, task, events, report)
        snapshots = [e for e in events if e.get("kind") == SNAPSHOT]
        if snapshots:
            _check_verdicts(task_id, task, snapshots, contents, report)
