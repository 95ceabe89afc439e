"""The packet of an attempt that ended before writing one: a crash, for one.

An attempt writes its packet when its runs are done and its answer goes to validation. An attempt
a crash ends never gets there, yet its runs' events (tool results above all) are on disk: they
are this attempt's evidence, and seed 002 has every later validation see the evidence of every
attempt. So whatever closes such an attempt first records the packet its events make, numbered
where the task's numbering stands, and from then on it is a packet like any other: the next
attempt's ``earlier_packets`` reads it, the validator renders it, ids never move.

Idempotent: the packet is rebuilt from the same events, so a second recovery (after a recovery
that itself stopped between this write and the task's move) writes the same packet again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core.domain.evidence import TaskEvidencePacket
from core.domain.facts import AttemptState
from core.domain.records import AttemptRecord
from core.evidence.packet import earlier_packets
from core.evidence.provisional import provisional_packet
from core.evidence.render import next_evidence_number
from core.store import Store

__all__ = ["lacks_packet", "record_unpacked_evidence"]

log = logging.getLogger(__name__)


def lacks_packet(attempt: AttemptRecord | None) -> bool:
    """Still running and never recorded its finish: its packet (written with the finish) is missing.

    Read from the attempt's facts, not its packet column (recovery reads attempts without it).
    """
    return attempt is not None and attempt.state is AttemptState.RUNNING and attempt.finish_reason is None


async def record_unpacked_evidence(store: Store, attempts: Sequence[tuple[str, AttemptRecord]]) -> int:
    """Write the packet of each ``(task_id, attempt)`` that lacks one; returns how many were written.

    The runs' events are read in one query for all of them. An attempt whose runs recorded nothing
    gets no packet (there is nothing to number); a packet that cannot be built is logged and
    skipped, never a reason to leave a task unrecovered.
    """
    wanted = [(task_id, a) for task_id, a in attempts if lacks_packet(a)]
    if not wanted:
        return 0
    events = await store.attempt_run_events([a.id for _, a in wanted])
    written = 0
    for task_id, attempt in wanted:
        if not events[attempt.id]:
            continue
        try:
            start = 1
            if attempt.index > 1:
                start = next_evidence_number(await earlier_packets(store, task_id, attempt.index))
            # Read as ended: a run with no end is then an interrupted one, not one still going.
            ended = attempt.model_copy(update={"state": AttemptState.INTERRUPTED})
            packet: TaskEvidencePacket | None = provisional_packet(
                task_id, ended, events[attempt.id], evidence_id_start=start
            )
            if packet is None:
                continue
            await store.update_attempt(attempt.id, packet=packet.model_dump(mode="json"))
            written += 1
        except Exception:  # recovery goes on: the events stay the record either way
            log.exception("task %s attempt %d: could not record its evidence packet", task_id, attempt.index)
    return written
