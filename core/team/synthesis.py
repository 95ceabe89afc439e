"""The synthesis request: the team's evidence handed to the main agent, and how to recognise it later.

The message lands in the main session's history. The validator shows that history, and it shows
the same team evidence in its own evidence section, so the history must show the request without
the evidence (a team prompt would otherwise hold every node output twice and reach chunked mode at
half the real size). The format is built and taken apart here, in one place, so the two cannot drift.
"""

from __future__ import annotations

import json
from typing import Any

from core.domain.evidence import TaskEvidencePacket, TeamRunResult
from core.evidence.render import render_packet
from core.evidence.wrapping import neutralise
from core.team.disagreement import find_disagreements, format_disagreements

__all__ = [
    "DISAGREEMENT_HEAD",
    "SYNTHESIS_INSTRUCTIONS",
    "build_synthesis_message",
    "synthesis_without_evidence",
    "team_packet",
]

SYNTHESIS_INSTRUCTIONS = """\
Write the final answer to the task above from the team evidence.
- Treat the team evidence as the source of truth: it is everything the team found.
- Do not repeat tool calls the team already made, whether they succeeded or failed.
- Answer with what is available, even if some nodes failed or ran out of budget.
- State clearly what is missing or uncertain, and which nodes failed or were incomplete."""

DISAGREEMENT_HEAD = (
    "\nThe team's nodes disagree on these values (found by comparing their answers); settle each "
    "from the evidence or say that it is disputed:\n"
)
_TASK_HEAD = "Task:\n"
_EVIDENCE_HEAD = "\n\nTeam evidence (plan '"


def team_packet(
    team: TeamRunResult, *, task_id: str, attempt_index: int, evidence_id_start: int | None = None
) -> TaskEvidencePacket:
    """The team part of the attempt's packet. ``evidence_id_start`` continues the task's numbering,
    so on attempt 2 the synthesis sees the ids the validator will cite (not E1 again)."""
    return TaskEvidencePacket(
        task_id=task_id,
        attempt_index=attempt_index,
        team_runs=team.run_evidence,
        team_node_results=list(team.node_results),
        evidence_id_start=evidence_id_start,
        disagreements=find_disagreements(team.node_results),
    )


def build_synthesis_message(
    *,
    task_text: str,
    team: TeamRunResult,
    task_id: str,
    attempt_index: int,
    evidence_id_start: int | None = None,
) -> dict[str, Any]:
    """Rendered through ``render_packet`` so synthesis sees the same ids the validator will see."""
    packet = team_packet(
        team, task_id=task_id, attempt_index=attempt_index, evidence_id_start=evidence_id_start
    )
    evidence = render_packet(packet, include_final_output=False).text
    if packet.disagreements:
        evidence += DISAGREEMENT_HEAD + neutralise(format_disagreements(packet.disagreements)) + "\n"
    warnings = "".join(
        f"\nTeam warning: {json.dumps(neutralise(w), ensure_ascii=False)}" for w in team.warnings
    )
    content = (
        f"{_TASK_HEAD}{task_text.strip()}"
        f"{_EVIDENCE_HEAD}{neutralise(team.plan_id)}', mode {team.mode}):{warnings}\n{evidence}\n"
        f"{SYNTHESIS_INSTRUCTIONS}"
    )
    return {"role": "user", "content": content}


def synthesis_without_evidence(content: str, pointer: str) -> str | None:
    """A synthesis request with its team evidence replaced by ``pointer``; None for any other message.

    The task part and the instructions stay: they are what the agent was asked. Only the exact
    shape :func:`build_synthesis_message` writes is recognised.
    """
    if not content.startswith(_TASK_HEAD) or not content.endswith(SYNTHESIS_INSTRUCTIONS):
        return None
    cut = content.find(_EVIDENCE_HEAD)
    if cut < 0:
        return None
    header_end = content.find("\n", cut + len(_EVIDENCE_HEAD))
    if header_end < 0:
        return None
    header = content[cut + 2 : header_end]  # "Team evidence (plan '...', mode ...):"
    return f"{content[:cut]}\n\n{header} {pointer}\n\n{SYNTHESIS_INSTRUCTIONS}"
