"""How the desk names and colours statuses, outcomes and queue groups: one table each.

Core decides what a status *means* (its flags, its transitions) and which statuses form a queue
group; this module only says how they read on screen. Every view takes its words and colours
from here, so a status can never be spelt two ways in one window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.domain.labels import NO_OUTCOME, OUTCOME_LABELS, outcome_label
from core.domain.queue import (
    BLIND_QUEUE_GROUPS,
    QUEUE_GROUPS,
    SECOND_REVIEW_QUEUE_GROUPS,
    OutcomeFilter,
    QueueGroup,
)
from core.domain.status import TaskStatus, ValidationOutcome, ValidationStatus

S = TaskStatus

STATUS_LABELS: dict[TaskStatus, str] = {
    S.OPEN: "open",
    S.RUNNING: "running",
    S.VALIDATING: "validating",
    S.AWAITING_FEEDBACK: "awaiting feedback",
    S.NEEDS_REVIEW: "needs review",
    S.NEEDS_REVISION: "needs revision",
    S.FAILED: "failed",
    S.CLOSED: "closed",
    S.ABANDONED: "abandoned",
}

# Pill colours in the queue's status column: distinct hues, readable on light and dark palettes.
STATUS_COLOURS: dict[TaskStatus, str] = {
    S.NEEDS_REVIEW: "#e0a100",
    S.AWAITING_FEEDBACK: "#2e8b57",
    S.NEEDS_REVISION: "#8e6bbf",
    S.RUNNING: "#2f7ed8",
    S.VALIDATING: "#2f7ed8",
    S.OPEN: "#7f8c8d",
    S.FAILED: "#c0392b",
    S.CLOSED: "#5d6d7e",
    S.ABANDONED: "#95a5a6",
}

# The queue column is narrow, so short; the detail header spells "not endorsed" out.
OUTCOME_SHORT: dict[ValidationOutcome, str] = dict(OUTCOME_LABELS)  # the words are core's
OUTCOME_FULL: dict[ValidationOutcome | None, str] = {o: OUTCOME_LABELS[o] for o in ValidationOutcome}
OUTCOME_FULL[None] = NO_OUTCOME
# An outcome delivered without the validator's endorsement is shown in this colour.
NOT_ENDORSED_COLOUR = "#c0392b"

# The validator's verdicts, as the verdict pane colours them.
VERDICT_COLOURS: dict[ValidationStatus, str] = {
    ValidationStatus.ACCEPTED: "#2e8b57",
    ValidationStatus.REJECTED: "#c0392b",
    ValidationStatus.INSUFFICIENT_EVIDENCE: "#d68910",
    ValidationStatus.VALIDATOR_ERROR: "#8e44ad",
}
ERROR_COLOUR = "#c0392b"  # error text in dialogs and panes

OUTCOME_FILTER_LABELS: dict[OutcomeFilter, str] = {
    OutcomeFilter.ANY: "Any outcome",
    OutcomeFilter.ACCEPTED: "Accepted",
    OutcomeFilter.FORCE_ACCEPTED: "Not endorsed",
    OutcomeFilter.UNVALIDATED: "Unvalidated",
    OutcomeFilter.NONE: "No outcome",
}


@dataclass(frozen=True)
class GroupLook:
    group: QueueGroup
    title: str
    hint: str

    @property
    def key(self) -> str:
        return self.group.key

    @property
    def statuses(self) -> tuple[TaskStatus, ...]:
        return self.group.statuses


_GROUP_WORDS: dict[str, tuple[str, str]] = {
    "needs_review": ("Needs review", "delivered without the validator's endorsement"),
    "awaiting_feedback": ("Awaiting feedback", "accepted by the validator"),
    "to_judge": (
        "To judge",
        "awaiting your decision (blind review: the verdict shows after your first judgement)",
    ),
    "second_review": ("Second reviews due", "decided by someone else: decide independently"),
    "needs_revision": ("Needs revision", "a new attempt is due"),
    "active": ("Running and validating", "work in flight"),
    "open": ("Open", "not started"),
    "failed": ("Failed", "no usable answer"),
    "closed": ("Closed", "the analyst was satisfied"),
    "abandoned": ("Abandoned", "the analyst gave up on it"),
}
GROUPS: tuple[GroupLook, ...] = tuple(GroupLook(g, *_GROUP_WORDS[g.key]) for g in QUEUE_GROUPS)
BLIND_GROUPS: tuple[GroupLook, ...] = tuple(GroupLook(g, *_GROUP_WORDS[g.key]) for g in BLIND_QUEUE_GROUPS)
SECOND_REVIEW_GROUPS: tuple[GroupLook, ...] = tuple(
    GroupLook(g, *_GROUP_WORDS[g.key]) for g in SECOND_REVIEW_QUEUE_GROUPS
)

# Amber band for "Needs review": readable on both light and dark palettes.
NEEDS_REVIEW_BAND = "#f0b429"
NEEDS_REVIEW_TEXT = "#2b1d00"


_STORED_NAMES = re.compile(
    "'?\\b("
    + "|".join(sorted((s.value for s in TaskStatus), key=len, reverse=True))
    + "|"
    + ValidationOutcome.FORCE_ACCEPTED.value
    + ")\\b'?"
)


def in_words(message: str) -> str:
    """A message for the analyst with stored names in the desk's words: core's refusals say
    "cannot move a task from 'needs_review'", the desk says "needs review" everywhere else."""

    def word(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == ValidationOutcome.FORCE_ACCEPTED.value:
            return OUTCOME_LABELS[ValidationOutcome.FORCE_ACCEPTED]
        return STATUS_LABELS[TaskStatus(name)]

    return _STORED_NAMES.sub(word, message)


def label(value: str) -> str:
    """A stored value (a status, a category, a state) as words: ``needs_review`` reads "needs review"."""
    return value.replace("_", " ")


# The queue's Outcome column is about 14 characters wide: "not endorsed: insufficient evidence"
# was elided in the middle ("not en…idence"), the one part that says why. The queue shows these
# words, coloured when the answer is not endorsed, with the full label as the cell's tooltip.
_NOT_ENDORSED_SHORT: dict[ValidationStatus, str] = {
    ValidationStatus.REJECTED: "rejected",
    ValidationStatus.INSUFFICIENT_EVIDENCE: "no evidence",
    ValidationStatus.VALIDATOR_ERROR: "error",
    ValidationStatus.ACCEPTED: "schema unmet",
}
_ENDORSEMENT_SHORT: dict[ValidationOutcome, str] = {
    ValidationOutcome.ACCEPTED: "accepted",
    ValidationOutcome.FORCE_ACCEPTED: "not endorsed",
    ValidationOutcome.UNVALIDATED: "unvalidated",
}


@dataclass(frozen=True)
class OutcomeCell:
    """An outcome as the queue shows it: short words, the full label, a colour when not endorsed."""

    short: str
    full: str
    colour: str | None


def outcome_cell(outcome: ValidationOutcome | None, validation_status: str | None = None) -> OutcomeCell:
    """The queue's Outcome cell; empty for a task with no outcome yet."""
    if outcome is None:
        return OutcomeCell("", "", None)
    full = outcome_text(outcome, validation_status)
    short = _ENDORSEMENT_SHORT[outcome]
    if outcome is ValidationOutcome.FORCE_ACCEPTED and validation_status is not None:
        short = _NOT_ENDORSED_SHORT.get(ValidationStatus(validation_status), short)
    colour = NOT_ENDORSED_COLOUR if outcome is ValidationOutcome.FORCE_ACCEPTED else None
    return OutcomeCell(short, full, colour)


def outcome_text(outcome: ValidationOutcome | None, validation_status: str | None = None) -> str:
    """Force-accepted is spelled out, with the verdict behind it when known ("not endorsed:
    rejected"), so nobody reads it as an endorsement; the words are core's (``show``, reports)."""
    if outcome is None:
        return OUTCOME_FULL[None]
    return outcome_label(outcome, validation_status)


__all__ = [
    "BLIND_GROUPS",
    "ERROR_COLOUR",
    "GROUPS",
    "NEEDS_REVIEW_BAND",
    "NEEDS_REVIEW_TEXT",
    "NOT_ENDORSED_COLOUR",
    "OUTCOME_FILTER_LABELS",
    "OUTCOME_FULL",
    "OUTCOME_SHORT",
    "SECOND_REVIEW_GROUPS",
    "STATUS_COLOURS",
    "STATUS_LABELS",
    "VERDICT_COLOURS",
    "GroupLook",
    "OutcomeCell",
    "label",
    "outcome_cell",
    "outcome_text",
]
