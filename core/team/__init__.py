"""Teams: plans (sequence, parallel, DAG), the bounded scheduler, synthesis and the attempt packet.

Importing this package never imports litellm; the planner imports structured output lazily.
"""

from core.team.packet import build_attempt_packet
from core.team.plan import (
    PlanError,
    TeamNode,
    TeamPlan,
    load_team_plan,
    parse_team_plan,
    plan_with_model,
    team_plan_from_text,
)
from core.team.scheduler import (
    SYNTHESIS_INSTRUCTIONS,
    TeamScheduler,
    build_node_messages,
    build_synthesis_message,
    node_status,
)

__all__ = [
    "SYNTHESIS_INSTRUCTIONS",
    "PlanError",
    "TeamNode",
    "TeamPlan",
    "TeamScheduler",
    "build_attempt_packet",
    "build_node_messages",
    "build_synthesis_message",
    "load_team_plan",
    "node_status",
    "parse_team_plan",
    "plan_with_model",
    "team_plan_from_text",
]
