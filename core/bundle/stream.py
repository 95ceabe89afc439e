"""Masking and checking a big text piece by piece, so a gigabyte never sits in memory.

The text arrives in pieces (the store's chunks). Each round scans the carry from the last round
plus the new piece, but emits only up to a *hold* point ``overlap`` characters before its end: a
match that reaches past the hold may continue in the next piece, so the hold moves back to where
that match starts and the match is scanned again, whole, with the next piece. Matches before the
hold are masked exactly as ``Redactor.text`` masks them, in the same rule order, so a secret that
straddles a chunk boundary is masked like any other. A match may push the hold back at most
``max_carry`` characters (a PEM block without its end line): past that it is masked as found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from core.bundle.needles import Needle
from core.bundle.paths import MachineScrub
from core.bundle.redact import MASK, Redactor, Rule

__all__ = ["DEFAULT_OVERLAP", "LeftoverScan", "StreamMasker"]

# Longer than any secret shape needs (a 4096-bit RSA key in PEM is about 3.3 KB).
DEFAULT_OVERLAP = 8192
MAX_CARRY = 256 * 1024


@dataclass
class _Scan:
    regex: re.Pattern[str]
    needle: Needle | None
    replace: Callable[[re.Match[str]], str]
    rule: Rule | None = None
    label: str = ""


def _scrub_scan(scrub: MachineScrub) -> _Scan | None:
    if not scrub.literals:
        return None
    marks = dict(scrub.literals)
    regex = re.compile("|".join(re.escape(lit) for lit, _ in scrub.literals))  # longest first

    def replace(m: re.Match[str]) -> str:
        mark = marks[m.group(0)]
        scrub.replaced[mark] = scrub.replaced.get(mark, 0) + 1
        return mark

    return _Scan(regex, Needle(tuple(marks), ignore_case=False), replace, label="machine path")


@dataclass
class StreamMasker:
    """Scrubs machine paths, then masks every redaction rule, over a text fed in pieces."""

    redactor: Redactor
    entry: str
    scrub: MachineScrub | None = None
    overlap: int = DEFAULT_OVERLAP
    max_carry: int = MAX_CARRY
    changed: bool = False
    """Whether the last round masked or held back anything: only then can a rule still match
    its output (an unchanged text was already scanned by every rule, with its overlap)."""
    _carry: str = ""
    _scans: list[_Scan] = field(default_factory=list)

    def __post_init__(self) -> None:
        scrubbing = _scrub_scan(self.scrub) if self.scrub is not None else None
        self._scans = [scrubbing] if scrubbing is not None else []
        self._scans += [
            _Scan(regex, needle, lambda _m: MASK, rule=rule, label=rule.label)
            for rule, regex, needle in self.redactor.scans()
        ]

    def feed(self, piece: str) -> str:
        """Masked text that is final; the tail that a later piece may still change is held back."""
        return self._round(self._carry + piece, final=False)

    def close(self) -> str:
        return self._round(self._carry, final=True)

    def _round(self, text: str, *, final: bool) -> str:
        hold = len(text) if final else max(0, len(text) - self.overlap)
        floor = max(0, len(text) - self.overlap - self.max_carry)
        lowered: list[str] = []
        seen: dict[str, bool] = {}
        self.changed = False
        for scan in self._scans:
            if scan.needle is not None and not scan.needle.present(text, lowered, seen):
                continue
            before = hold
            text, hold, n = self._apply(scan, text, hold, floor, final)
            if n or hold != before:
                self.changed = True
                lowered.clear()
                seen.clear()
        self._carry = text[hold:]
        return text[:hold]

    def _apply(self, scan: _Scan, text: str, hold: int, floor: int, final: bool) -> tuple[str, int, int]:
        out: list[str] = []
        pos = 0
        n = 0
        shift = 0
        for m in scan.regex.finditer(text):
            start, end = m.span()
            if not final and start >= hold:
                break
            if not final and end > hold and start >= floor:
                hold = start  # may continue in the next piece: scan it again, whole, then
                break
            out.append(text[pos:start])
            replacement = scan.replace(m)
            out.append(replacement)
            shift += len(replacement) - (end - start)
            if end > hold:
                hold = end  # masked as found past the carry limit: never emit half of it later
            pos = end
            n += 1
        if not n:
            return text, hold, 0
        out.append(text[pos:])
        if scan.rule is not None:
            scan.rule.count += n
            scan.rule.entries.add(self.entry)
        return "".join(out), hold + shift, n

    def run(self, pieces: Iterable[str]) -> Iterator[str]:
        for piece in pieces:
            done = self.feed(piece)
            if done:
                yield done
        tail = self.close()
        if tail:
            yield tail


@dataclass
class LeftoverScan:
    """``Redactor.leftover`` over a text written in pieces: pieces are gathered up to ``batch``
    characters and searched with the tail of what came before, so a match spanning two writes is
    still found and an entry of many small lines costs one pass, not one pass per line."""

    redactor: Redactor
    name: str
    overlap: int = DEFAULT_OVERLAP
    batch: int = 1 << 20
    found: str | None = None
    _tail: str = ""
    _pending: list[str] = field(default_factory=list)
    _pending_chars: int = 0

    def __post_init__(self) -> None:
        self.found = self.redactor.leftover(self.name, "")

    def feed(self, piece: str, *, scan: bool = True) -> None:
        """``scan=False``: the piece is known clean (it left the masker unchanged); keep its tail only."""
        if self.found is not None or not piece:
            return
        if not scan and not self._pending:
            self._tail = (self._tail + piece[-self.overlap :])[-self.overlap :]
            return
        self._pending.append(piece)
        self._pending_chars += len(piece)
        if self._pending_chars >= self.batch:
            self.flush()

    def flush(self) -> str | None:
        """Search what is gathered; returns the label of the first rule still matching, or None."""
        if self._pending and self.found is None:
            text = self._tail + "".join(self._pending)
            self._pending.clear()
            self._pending_chars = 0
            self.found = self.redactor.leftover(self.name, text)
            self._tail = text[-self.overlap :]
        return self.found
