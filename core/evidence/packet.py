"""An attempt's evidence packet: the agent's run, the answer, and where its ids start.

A task's attempts share one evidence numbering: each packet records where its ids start, read
from the attempts recorded before it, so an id never changes meaning between attempts. The
earlier packets are read once per attempt (``earlier_packets``) and handed to everything that
numbers or judges evidence after it: the team's synthesis, this packet, and the validator.

A single agent's packet is built here; a team's adds its nodes (``core.team.packet``).
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from core.domain.evidence import TaskEvidencePacket
from core.evidence.builder import build_run_evidence
from core.evidence.content import index_packet
from core.evidence.render import next_evidence_number
from core.store import Store

__all__ = ["attempt_packet", "earlier_packets"]

log = logging.getLogger(__name__)


async def earlier_packets(store: Store, task_id: str, before_index: int) -> list[TaskEvidencePacket]:
    """The recorded packets of the task's attempts before ``before_index``, oldest first, indexed.

    An attempt without a packet (it never got that far) contributes nothing; an unreadable one
    is skipped with a warning rather than failing the new attempt. Read as an index (outputs
    inline, big tool texts as references): the validator streams them, and ids only count items.
    """
    packets: list[TaskEvidencePacket] = []
    for attempt in await store.list_attempts(task_id, resolve=False):
        if attempt.index >= before_index or not attempt.packet:
            continue
        try:
            packets.append(await index_packet(store, TaskEvidencePacket.model_validate(attempt.packet)))
        except ValidationError as exc:
            log.warning(
                "task %s attempt %d: unreadable evidence packet skipped: %s", task_id, attempt.index, exc
            )
    return packets


async def attempt_packet(
    store: Store,
    *,
    task_id: str,
    attempt_index: int,
    main_session_id: str | None,
    main_run_id: str | None,
    final_output: str = "",
    earlier: list[TaskEvidencePacket] | None = None,
) -> TaskEvidencePacket:
    """The packet of one attempt's main run (the agent's, or a team's synthesis).

    Tool texts stay references (``resolve=False``): they are already in the chunk store, and
    reading gigabytes back only to store them again would be the slowest part of an attempt.
    """
    main = None
    if main_session_id is not None and main_run_id is not None:
        main = await build_run_evidence(store, main_session_id, main_run_id, resolve=False)
    return TaskEvidencePacket(
        task_id=task_id,
        attempt_index=attempt_index,
        main_run=main,
        final_output=final_output,
        evidence_id_start=next_evidence_number(earlier or []),
    )
