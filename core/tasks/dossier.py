"""Everything stored about one task, gathered in one read: what ``show``, the desk and reports use.

Readers take each attempt's facts as recorded (its ``state`` and ``validation_outcome`` are written
by whatever ended it, with the task's move), so ``show``, the desk, the audit report and an opened
bundle can never tell two different stories about the same attempt.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, PrivateAttr

from core.domain import TaskEvidencePacket, ValidationOutcome
from core.domain.facts import AttemptState
from core.domain.usage import UsageTotals, attempt_usage, task_usage
from core.evidence.content import item_length, item_range
from core.evidence.provisional import provisional_packet
from core.evidence.render import EvidenceItem, next_evidence_number, render_packet, task_items
from core.store import (
    AttemptRecord,
    EventRecord,
    FeedbackRecord,
    SessionRecord,
    Store,
    TaskRecord,
    ValidationRecord,
)


class TaskDossier(BaseModel):
    task: TaskRecord
    attempts: list[AttemptRecord]
    validations: list[ValidationRecord]
    feedback: list[FeedbackRecord]
    sessions: list[SessionRecord]
    events: list[EventRecord]
    # Packets validated once (in a worker, by ``load_dossier``), not on every read on the GUI thread.
    _packets: dict[int, TaskEvidencePacket | None] = PrivateAttr(default_factory=dict)
    _evidence: dict[int, TaskEvidencePacket | None] = PrivateAttr(default_factory=dict)
    _items: dict[int, list[EvidenceItem]] = PrivateAttr(default_factory=dict)
    _usage: tuple[UsageTotals, dict[int, UsageTotals]] | None = PrivateAttr(default=None)

    def prepare(self) -> None:
        """Validate every attempt's packet and render its evidence items now: ``load_dossier`` calls
        this in a worker thread, so a view reading them afterwards (the desk's evidence tree)
        never decodes or renders on its own (GUI) thread. The usage totals likewise."""
        for a in self.attempts:
            self.evidence_items(a.index)
        self._usage_totals()

    def evidence_packets(self, attempt_index: int) -> list[TaskEvidencePacket | None]:
        """Attempts 1..N's packets (N = ``attempt_index``), oldest first, as the evidence tree shows them."""
        return [
            self.evidence_packet(a.index)
            for a in sorted(self.attempts, key=lambda a: a.index)
            if a.index <= attempt_index
        ]

    def evidence_items(self, attempt_index: int) -> list[EvidenceItem]:
        """The items of attempts 1..N numbered as the validator of attempt N saw them (a single or
        pre-task-wide-ids packet: its own items without the final output). Big texts stay references."""
        if attempt_index in self._items:
            return self._items[attempt_index]
        items = task_items([p for p in self.evidence_packets(attempt_index) if p is not None])
        self._items[attempt_index] = items
        return items

    def attempt(self, attempt_index: int) -> AttemptRecord | None:
        return next((a for a in self.attempts if a.index == attempt_index), None)

    def packet(self, attempt_index: int) -> TaskEvidencePacket | None:
        if attempt_index in self._packets:
            return self._packets[attempt_index]
        a = self.attempt(attempt_index)
        found = (
            TaskEvidencePacket.model_validate(a.packet) if a is not None and a.packet is not None else None
        )
        if a is not None:
            self._packets[attempt_index] = found
        return found

    def evidence_packet(self, attempt_index: int) -> TaskEvidencePacket | None:
        """The attempt's packet, or for one without (running, cancelled, crashed) its recorded events'.

        Ids continue from the earlier attempts' packets, as the packet's would have.
        """
        if attempt_index in self._evidence:
            return self._evidence[attempt_index]
        recorded = self.packet(attempt_index)
        attempt = self.attempt(attempt_index)
        if recorded is not None or attempt is None:
            return recorded
        earlier = [
            p for a in self.attempts if a.index < attempt_index and (p := self.packet(a.index)) is not None
        ]
        start = next_evidence_number(earlier) if earlier else 1
        found = provisional_packet(self.task.id, attempt, self.events, evidence_id_start=start)
        self._evidence[attempt_index] = found
        return found

    @staticmethod
    def attempt_force_accepted(attempt: AttemptRecord) -> bool:
        """Delivered without the validator's endorsement."""
        return attempt.validation_outcome is ValidationOutcome.FORCE_ACCEPTED

    @staticmethod
    def attempt_interrupted(attempt: AttemptRecord) -> bool:
        """The process running this attempt died; crash recovery ended it."""
        return attempt.state is AttemptState.INTERRUPTED

    def usage(self) -> UsageTotals:
        """Tokens and cost of every recorded call of the task (agent runs and validations)."""
        return self._usage_totals()[0]

    def attempt_usage(self) -> dict[int, UsageTotals]:
        """Tokens and cost per attempt index: its runs' calls plus its validations'."""
        return self._usage_totals()[1]

    def _usage_totals(self) -> tuple[UsageTotals, dict[int, UsageTotals]]:
        """Both totals, decoded from the events once per dossier (the desk asks on every attempt
        it shows; ``prepare`` does it in the worker that loaded the dossier)."""
        if self._usage is None:
            self._usage = (
                task_usage(self.attempts, self.validations, self.events),
                attempt_usage(self.attempts, self.validations, self.events),
            )
        return self._usage

    def validation_for(self, attempt_index: int) -> ValidationRecord | None:
        """The attempt's last verdict (a re-validation replaces the earlier one)."""
        found = [v for v in self.validations if v.attempt_index == attempt_index]
        return found[-1] if found else None


async def load_dossier(
    store: Store, task_id: str, *, with_events: bool = True, resolve: bool = True
) -> TaskDossier:
    """Everything about a task. ``resolve=False`` leaves big evidence texts as chunk references
    (in packets and events) for a caller that streams them through ``core.evidence.content``."""
    task = await store.get_task(task_id)
    dossier = TaskDossier(
        task=task,
        attempts=await store.list_attempts(task.id, resolve=resolve),
        validations=await store.list_validations(task.id),
        feedback=await store.list_feedback(task.id),
        sessions=await store.list_sessions(task.id),
        events=await store.get_task_events(task.id, resolve=resolve) if with_events else [],
    )
    await asyncio.to_thread(dossier.prepare)
    return dossier


PAGE_CHARS = 1 << 20


class EvidencePage(BaseModel):
    """A character range of one evidence item, for a viewer that pages big items."""

    evidence_id: str
    offset: int
    text: str
    total: int  # the item's length in characters

    @property
    def more(self) -> bool:
        return self.offset + len(self.text) < self.total


async def evidence_index(store: Store, task_id: str, attempt_index: int) -> list[EvidenceItem]:
    """An attempt's evidence items as an index: big texts stay in the chunk store, unread.

    Built in a worker thread from the packet's references, so a view can list a gigabyte of
    evidence without loading it, then ask ``evidence_page`` for what it shows.
    """
    attempts = await store.list_attempts(task_id, resolve=False)
    attempt = next((a for a in attempts if a.index == attempt_index), None)
    if attempt is None or not attempt.packet:
        return []
    packet = await asyncio.to_thread(TaskEvidencePacket.model_validate, attempt.packet)
    return (await asyncio.to_thread(render_packet, packet)).items


async def evidence_page(
    store: Store, item: EvidenceItem, offset: int = 0, length: int = PAGE_CHARS
) -> EvidencePage:
    """``length`` characters of ``item`` from ``offset``: reads only the chunks under them."""
    text = await item_range(store, item, offset, length)
    return EvidencePage(evidence_id=item.evidence_id, offset=offset, text=text, total=item_length(item))


__all__ = ["EvidencePage", "TaskDossier", "evidence_index", "evidence_page", "load_dossier"]
