"""Literal pre-checks for redaction patterns: skip a regex on text that cannot hold a match.

Python's ``re`` tries a pattern that starts with a character class (``\\d{8,10}:...``,
``[0-9a-z]{32}-us...``) at every position of the text, which made the secret shapes scan a big
tool result at a few MB/s. Almost every shape requires some literal (``-us``, ``k_live_``, ``:``);
``str.__contains__`` finds or rules out a literal at memory speed, so a chunk without it skips the
regex. The literals are read from the parsed pattern, never written by hand, so a pre-check can only
skip text on which the regex would find nothing: masking is never weakened.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any

# Python 3.11+ names the parser ``re._parser`` (typeshed does not list it); it is what ``re``
# itself compiles with, so the literals read here are exactly what the regex requires.
sre_parse: Any = importlib.import_module("re._parser")

__all__ = ["Needle", "needle_of"]

_LITERAL = sre_parse.LITERAL
_SUBPATTERN = sre_parse.SUBPATTERN
_BRANCH = sre_parse.BRANCH


@dataclass(frozen=True)
class Needle:
    """Every match contains at least one of ``literals`` (compared case-folded if ``ignore_case``)."""

    literals: tuple[str, ...]
    ignore_case: bool

    def present(self, text: str, lowered: list[str], seen: dict[str, bool] | None = None) -> bool:
        """Whether the regex must run on ``text``; ``lowered`` caches ``text.lower()`` between rules.

        ``seen`` remembers, for this one text, which literals were searched: a literal known absent
        rules out every literal containing it (``gl`` absent: no ``glpat-`` either) without a scan.
        """
        if not self.ignore_case:
            return any(_contains(text, lit, seen) for lit in self.literals)
        if not text.isascii():
            return True  # Unicode case folding ("ſ" matches "s") is beyond a plain lower()
        if not lowered:
            lowered.append(text.lower())
        return any(_contains(lowered[0], lit, None) for lit in self.literals)


def _contains(text: str, literal: str, seen: dict[str, bool] | None) -> bool:
    if seen is None:
        return literal in text
    known = seen.get(literal)
    if known is None:
        if any(not found and short in literal for short, found in seen.items()):
            known = False
        else:
            known = literal in text
        seen[literal] = known
    return known


def _best(candidates: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The candidate whose shortest literal is longest: the rarest thing to find in ordinary text."""
    usable = [c for c in candidates if c and all(c)]
    if not usable:
        return None
    return max(usable, key=lambda c: (min(len(x) for x in c), -len(c)))


def _required(items: Any, flags: list[int]) -> tuple[str, ...] | None:
    """Alternatives one of which every match of the sequence ``items`` contains, or None."""
    candidates: list[tuple[str, ...]] = []
    run: list[str] = []
    for op, arg in items:
        if op is _LITERAL:
            run.append(chr(arg))
            continue
        if run:
            candidates.append(("".join(run),))
            run = []
        if op is _SUBPATTERN:
            add_flags = arg[1]
            flags.append(add_flags)
            inner = _required(arg[3], flags)
            if inner is not None:
                candidates.append(inner)
        elif op is _BRANCH:
            alternatives: list[str] = []
            for alt in arg[1]:
                found = _required(alt, flags)
                if found is None:
                    alternatives = []
                    break
                alternatives.extend(found)
            if alternatives:
                candidates.append(tuple(dict.fromkeys(alternatives)))
    if run:
        candidates.append(("".join(run),))
    return _best(candidates)


def needle_of(regex: re.Pattern[str]) -> Needle | None:
    """The literal pre-check for ``regex``, or None when no literal is required (always run it)."""
    try:
        parsed = sre_parse.parse(regex.pattern, regex.flags)
    except (re.error, RecursionError, TypeError):  # pragma: no cover - compiled already
        return None
    flags: list[int] = []
    found = _required(list(parsed), flags)
    if found is None:
        return None
    ignore_case = bool((regex.flags | parsed.state.flags) & re.IGNORECASE) or any(
        f & re.IGNORECASE for f in flags
    )
    if ignore_case:
        found = tuple(lit.lower() for lit in found)
        if not all(lit.isascii() for lit in found):
            return None
    return Needle(found, ignore_case)
