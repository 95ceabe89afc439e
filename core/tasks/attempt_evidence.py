"""The packet of an attempt that ended before writing one: a crash, for one.

An attempt writes its packet when its runs are done and its answer goes to validation. An attempt
a crash ends never gets there, yet its runs' events (tool results above all) are on disk: they
are this attempt's evidence, and seed 002 has every later validation see the evidence of every
attempt. So whatever closes such an attempt first records the packet its events make, numbered
where the task's numbering stands, and from then on it is a packet like any other: the next
attempt's ``earlier_packets`` reads it, the validator renders it, ids never move.

Crash recovery writes the packet in the same transaction as the task's move and the attempt's
end (``Store.recover_tasks``); an attempt this process ends (an error, a cancel) writes it just
before its end. Either way the packet is built from the events alone, so building it twice gives
the same packet. It is not added to the search index here (a crashed attempt's evidence never
was); ``search --reindex`` indexes it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from core.domain.facts import AttemptState
from core.domain.records import AttemptRecord
from core.evidence.packet import earlier_packets
from core.evidence.provisional import provisional_packet
from core.evidence.render import next_evidence_number
from core.store import Store

__all__ = ["lacks_packet", "record_unpacked_evidence", "unpacked_packets"]

log = logging.getLogger(__name__)


def lacks_packet(attempt: AttemptRecord | None) -> bool:
    """Still running and never recorded its finish: its packet (written with the finish) is missing.

    Read from the attempt's facts, not its packet column (recovery reads attempts without it).
    """
    return attempt is not None and attempt.state is AttemptState.RUNNING and attempt.finish_reason is None


async def unpacked_packets(
    store: Store, attempts: Sequence[tuple[str, AttemptRecord]]
) -> dict[str, dict[str, Any]]:
    """The packet (as stored JSON) of each ``(task_id, attempt)`` that lacks one, by attempt id.

    The runs' events are read in one query for all of them. An attempt whose runs recorded nothing
    gets no packet (there is nothing to number); a packet that cannot be built is logged and
    skipped, never a reason to leave a task unrecovered.
    """
    wanted = [(task_id, a) for task_id, a in attempts if lacks_packet(a)]
    if not wanted:
        return {}
    events = await store.attempt_run_events([a.id for _, a in wanted])
    packets: dict[str, dict[str, Any]] = {}
    for task_id, attempt in wanted:
        if not events[attempt.id]:
            continue
        try:
            start = 1
            if attempt.index > 1:
                start = next_evidence_number(await earlier_packets(store, task_id, attempt.index))
            # Read as ended: a run with no end is then an interrupted one, not one still going.
            ended = attempt.model_copy(update={"state": AttemptState.INTERRUPTED})
            packet = provisional_packet(task_id, ended, events[attempt.id], evidence_id_start=start)
        except Exception:  # recovery goes on: the events stay the record either way
            log.exception("task %s attempt %d: could not build its evidence packet", task_id, attempt.index)
            continue
        if packet is not None:
            packets[attempt.id] = packet.model_dump(mode="json")
    return packets


async def record_unpacked_evidence(store: Store, attempts: Sequence[tuple[str, AttemptRecord]]) -> int:
    """Write the packet of each attempt that lacks one (an attempt this process ends: an error, a
    cancel); returns how many were written. Crash recovery writes them with its moves instead."""
    packets = await unpacked_packets(store, attempts)
    for attempt_id, packet in packets.items():
        await store.update_attempt(attempt_id, packet=packet)
    return len(packets)
