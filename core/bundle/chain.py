"""Checking one session's hash-chained log line by line, as it is inflated.

``verify`` feeds each line the moment it is read, so a log is never held whole: what the check keeps
is the running hash, a few counters, the problems found, the content references (checked against
the members afterwards) and the few events the snapshot checks need (status moves, verdicts).
"""

from __future__ import annotations

import json
from typing import Any

from core.bundle.consistency import KEPT_KINDS
from core.bundle.format import MANIFEST_NAME, bundle_ref_of, event_hash, events_entry, genesis_hash
from core.inputs import loads_json

__all__ = ["CONTENT", "ECHO", "MAX_FAILURES_PER_ENTRY", "STRUCTURE", "ChainCheck", "refs_in"]

MAX_FAILURES_PER_ENTRY = 20
# Failures are listed by what they mean, so the real change comes first and its echoes after it:
CONTENT = 0  # an entry's content or a snapshot differs from what was hashed, chained or signed
STRUCTURE = 1  # entries or events added, removed, reordered; unsafe or oversized archive members
ECHO = 2  # consequences of the above: sizes, counts and chain heads that no longer match


def refs_in(value: Any, found: list[dict[str, Any]]) -> None:
    """Every format-2 content reference (under a ``*_ref`` key) inside a JSON value."""
    if isinstance(value, list):
        for v in value:
            refs_in(v, found)
    elif isinstance(value, dict):
        for key, v in value.items():
            ref = bundle_ref_of(v) if key.endswith("_ref") else None
            if ref is not None:
                found.append(ref)
            else:
                refs_in(v, found)


class ChainCheck:
    """The chain of one session, fed one line (bytes, without its newline) at a time."""

    def __init__(self, session_id: str, chain: dict[str, Any]) -> None:
        self.session_id = session_id
        self.chain = chain
        self.entry = events_entry(session_id)
        self.problems: list[tuple[int, str]] = []
        self.refs: list[dict[str, Any]] = []
        self.kept: list[dict[str, Any]] = []
        self.count = 0
        self._prev = genesis_hash(session_id)
        self._expected_seq = chain.get("first_seq")
        self._last_seq: int | None = None
        self._lineno = 0
        self._not_utf8: str | None = None

    def feed(self, raw: bytes) -> None:
        if self._not_utf8 is not None:
            return
        self._lineno += 1
        lineno = self._lineno
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._not_utf8 = str(exc)
            return
        try:
            event = loads_json(line)
        except json.JSONDecodeError as exc:
            self.problems.append((STRUCTURE, f"line {lineno} is not valid JSON ({exc.msg})"))
            return
        if not isinstance(event, dict):
            self.problems.append((STRUCTURE, f"line {lineno} is not an event object"))
            return
        self.count += 1
        if b'"member"' in raw:
            refs_in(event, self.refs)
        if (
            event.get("kind") in KEPT_KINDS
            and isinstance(event.get("payload"), dict)
            and event.get("task_id")
        ):
            self.kept.append(event)
        self._check(event, lineno)

    def _check(self, event: dict[str, Any], lineno: int) -> None:
        problems = self.problems
        seq = event.get("seq")
        where = f"event seq {seq}"
        expected_seq = self._expected_seq
        if event.get("session_id") != self.session_id:
            problems.append(
                (STRUCTURE, f"{where} (line {lineno}) belongs to session {event.get('session_id')!r}")
            )
        if isinstance(seq, int) and isinstance(expected_seq, int):
            if seq > expected_seq:
                gap = f"{expected_seq}" if seq == expected_seq + 1 else f"{expected_seq}-{seq - 1}"
                problems.append((STRUCTURE, f"event seq {gap} missing before line {lineno} (deleted)"))
            elif seq < expected_seq:
                problems.append(
                    (STRUCTURE, f"{where} at line {lineno} is out of order (reordered or duplicated)")
                )
        else:
            problems.append((STRUCTURE, f"line {lineno} has no valid seq"))
        if event.get("prev_hash") != self._prev:
            problems.append(
                (
                    STRUCTURE,
                    f"{where} (line {lineno}): chain broken, prev_hash does not match the event before it "
                    "(deleted, inserted or reordered)",
                )
            )
        recorded = event.get("hash")
        if recorded != event_hash(str(event.get("prev_hash")), event):
            problems.append((CONTENT, f"{where} (line {lineno}): hash mismatch (event changed)"))
        # Continue from the recorded hash so one changed event is reported once, not for every later line.
        self._prev = recorded if isinstance(recorded, str) else self._prev
        if isinstance(seq, int):
            self._expected_seq = seq + 1
            self._last_seq = seq

    def finish(self, report: Any) -> None:
        """Add what was found to ``report`` (a ``VerificationReport``), echoes last."""
        entry, chain = self.entry, self.chain
        if self._not_utf8 is not None:
            report.add(f"{entry}: not UTF-8 ({self._not_utf8})", CONTENT)
            return
        report.events_checked += self.count
        problems = list(self.problems)
        if self.count != chain.get("events"):
            problems.append((ECHO, f"holds {self.count} events, the manifest says {chain.get('events')}"))
        if self._prev != chain.get("head"):
            problems.append(
                (ECHO, "chain head does not match the manifest (events removed, added or changed)")
            )
        if self.count and self._last_seq != chain.get("last_seq"):
            problems.append(
                (ECHO, f"last event seq {self._last_seq} differs from the manifest's {chain.get('last_seq')}")
            )
        shown = problems[:MAX_FAILURES_PER_ENTRY]
        for rank, problem in shown:
            report.add(f"{entry}: {problem}", rank)
        if len(problems) > len(shown):
            report.add(f"{entry}: ... and {len(problems) - len(shown)} more problems", ECHO)


def chain_record(session_id: str, chain: Any) -> dict[str, Any] | None:
    """The manifest's chain record for a session if well-formed, else None."""
    if isinstance(chain, dict) and chain.get("entry") == events_entry(session_id):
        return chain
    return None


MALFORMED = f"{MANIFEST_NAME}: chain record for session {{}} is malformed"
