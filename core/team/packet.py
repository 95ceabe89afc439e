"""The attempt's evidence packet after a team run: main (synthesis) run, team runs, node results.

Node results are copied whole, failed, cancelled and budget-ended ones included, because the
validator must be able to see what the team tried and could not do, not only what worked.
"""

from __future__ import annotations

from core.domain.evidence import TaskEvidencePacket, TeamRunResult
from core.evidence.builder import build_run_evidence
from core.store import Store

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
) -> TaskEvidencePacket:
    """Assemble the packet of one attempt; ``main_run_id`` is the synthesis run in team mode."""
    main = None
    if main_session_id is not None and main_run_id is not None:
        main = await build_run_evidence(store, main_session_id, main_run_id)
    team_runs = []
    node_results = []
    for team in teams or []:
        node_results.extend(team.node_results)
        team_runs.extend(team.run_evidence)
    return TaskEvidencePacket(
        task_id=task_id,
        attempt_index=attempt_index,
        main_run=main,
        team_runs=team_runs,
        team_node_results=node_results,
        final_output=final_output,
    )
