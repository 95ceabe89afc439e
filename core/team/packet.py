"""The attempt's evidence packet after a team run: main (synthesis) run, team runs, node results.

Node results are copied whole, failed, cancelled and budget-ended ones included, because the
validator must be able to see what the team tried and could not do, not only what worked.

A task's attempts share one evidence numbering: each packet records where its ids start, read
from the attempts recorded before it, so an id never changes meaning between attempts.
"""

from __future__ import annotations

import asyncio
import logging

from pydantic import ValidationError

from core.domain.evidence import TaskEvidencePacket, TeamRunResult
from core.evidence.builder import build_run_evidence
from core.evidence.content import index_packet
from core.evidence.render import next_evidence_number
from core.store import Store
from core.team.disagreement import find_disagreements

__all__ = ["build_attempt_packet", "earlier_packets"]

log = logging.getLogger(__name__)


async def earlier_packets(store: Store, task_id: str, before_index: int) -> list[TaskEvidencePacket]:
    """The recorded packets of the task's attempts before ``before_index``, oldest first.

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


async def build_attempt_packet(
    store: Store,
    *,
    task_id: str,
    attempt_index: int,
    main_session_id: str | None,
    main_run_id: str | None,
    teams: list[TeamRunResult] | None = None,
    final_output: str = "",
    earlier: list[TaskEvidencePacket] | None = None,
) -> TaskEvidencePacket:
    """Assemble the packet of one attempt; ``main_run_id`` is the synthesis run in team mode.

    ``earlier`` are the task's earlier packets: this packet's ids continue after theirs. Where the
    team's nodes contradict each other is recorded here, once, so the validator and the desk read
    the same marks.
    """
    main = None
    if main_session_id is not None and main_run_id is not None:
        main = await build_run_evidence(store, main_session_id, main_run_id, resolve=False)
    team_runs = []
    node_results = []
    for team in teams or []:
        node_results.extend(team.node_results)
        team_runs.extend(team.run_evidence)
    # Off the event loop: the desk runs core on the GUI's loop, and a long answer takes a moment.
    disagreements = await asyncio.to_thread(find_disagreements, node_results)
    return TaskEvidencePacket(
        task_id=task_id,
        attempt_index=attempt_index,
        main_run=main,
        team_runs=team_runs,
        team_node_results=node_results,
        final_output=final_output,
        evidence_id_start=next_evidence_number(earlier or []),
        disagreements=disagreements,
    )
