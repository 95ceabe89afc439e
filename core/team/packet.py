"""A team attempt's evidence packet: the synthesis run's packet plus the team's runs and nodes.

Node results are copied whole, failed, cancelled and budget-ended ones included, because the
validator must be able to see what the team tried and could not do, not only what worked. Where
the nodes contradict each other is recorded here, once, so the validator and the desk read the
same marks.
"""

from __future__ import annotations

import asyncio

from core.domain.evidence import TaskEvidencePacket, TeamRunResult
from core.evidence.packet import attempt_packet
from core.store import Store
from core.team.disagreement import find_disagreements

__all__ = ["build_attempt_packet"]


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
    """The packet of one attempt; ``main_run_id`` is the synthesis run in team mode.

    ``earlier`` are the task's earlier packets: this packet's ids continue after theirs.
    """
    packet = await attempt_packet(
        store,
        task_id=task_id,
        attempt_index=attempt_index,
        main_session_id=main_session_id,
        main_run_id=main_run_id,
        final_output=final_output,
        earlier=earlier,
    )
    if not teams:
        return packet
    node_results = [node for team in teams for node in team.node_results]
    # Off the event loop: the desk runs core on the GUI's loop, and a long answer takes a moment.
    disagreements = await asyncio.to_thread(find_disagreements, node_results)
    return packet.model_copy(
        update={
            "team_runs": [run for team in teams for run in team.run_evidence],
            "team_node_results": node_results,
            "disagreements": disagreements,
        }
    )
