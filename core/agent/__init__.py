"""The agent loop: LLM calls, tool calls and the session events they leave.

Why a run stopped is a :class:`core.domain.facts.FinishReason`; its ``usable`` property says
whether the run's last text may be read as its answer.
"""

from core.agent.loop import FINALIZATION_INSTRUCTION, NO_ANSWER_MESSAGE, AgentLoop
from core.agent.outcome import COMPACT_SNAPSHOT_KEYS, RunOutcome, RunStep

__all__ = [
    "COMPACT_SNAPSHOT_KEYS",
    "FINALIZATION_INSTRUCTION",
    "NO_ANSWER_MESSAGE",
    "AgentLoop",
    "RunOutcome",
    "RunStep",
]
