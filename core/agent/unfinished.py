"""Is a reply offered as the final answer really one? The deterministic pre-check of seed 002/004.

A reply that still asks for tools (when none will run), or that only announces work it has not
done ("Let me search more."), is a preamble, not an answer. The agent loop asks this once for
every terminal reply: a team's no-tools synthesis, an agent that stopped calling tools, and the
no-tools finalization at the tool budget all go through the same rule, so the validator's
"unfinished answer" pre-check and the finalization's refusal can never disagree.

The announcement test is deliberately narrow: a short reply (at most ``ANNOUNCEMENT_MAX_CHARS``)
every sentence of which says the agent is about to do research work. "I'll answer now: the tide
is caused by the Moon" is an answer (its verb is not research), and so is any long reply.
"""

from __future__ import annotations

import re

__all__ = ["ANNOUNCEMENT_MAX_CHARS", "announces_more_work", "unfinished_reason"]

ANNOUNCEMENT_MAX_CHARS = 300

_OPENER = (
    r"(?:(?:ok(?:ay)?|sure|alright|now|next|first|then|great)[,!]?\s+)*"
    r"(?:let\s+me|let's|let\s+us|i\s*(?:'ll|will|shall|am\s+going\s+to|'m\s+going\s+to|need\s+to|"
    r"should|must|have\s+to|'d\s+like\s+to|would\s+like\s+to)|we\s*(?:'ll|will|need\s+to|should))"
)
_WORK = (
    r"(?:search|look|check|find|query|investigate|research|gather|read|fetch|dig|verify|continue|try|"
    r"call|use|explore|browse|run|consult|examine|review|open|perform|keep|do\s+(?:a|another|more|some))"
)
# The opener, up to three words (adverbs: "now", "quickly", "also"; never a negation: "I could not
# find it" is an answer), then the work verb.
_FILLER = r"(?:(?!not\b|never\b|n't\b)\w+\s+)"
_ANNOUNCEMENT = re.compile(rf"^{_OPENER}\s+{_FILLER}{{0,3}}?{_WORK}\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


def announces_more_work(text: str) -> bool:
    """Every sentence of a short reply announces research still to do, and nothing else is said."""
    body = text.strip()
    if not body or len(body) > ANNOUNCEMENT_MAX_CHARS:
        return False
    sentences = [s.strip(" \t*_-•:") for s in _SENTENCE_END.split(body)]
    sentences = [s.replace("’", "'") for s in sentences if s]
    return bool(sentences) and all(_ANNOUNCEMENT.match(s) for s in sentences)


def unfinished_reason(content: str | None, asked_for_tools: bool) -> str | None:
    """Why this terminal reply is not an answer (a phrase for messages and events), or None."""
    if asked_for_tools:
        return "still asked for tools"
    if announces_more_work(content or ""):
        return "only announced more work"
    return None
