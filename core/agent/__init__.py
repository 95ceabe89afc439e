"""The agent loop: LLM calls, tool calls and the session events they leave."""

from core.agent.loop import (
    CANCELLED,
    COMPACT_SNAPSHOT_KEYS,
    FINALIZATION_INSTRUCTION,
    FINALIZED,
    NO_ANSWER_MESSAGE,
    STOP,
    UNFINALIZED,
    USABLE_FINISH_REASONS,
    AgentLoop,
    RunOutcome,
    RunProgress,
)

__all__ = [
    "CANCELLED",
    "COMPACT_SNAPSHOT_KEYS",
    "FINALIZATION_INSTRUCTION",
    "FINALIZED",
    "NO_ANSWER_MESSAGE",
    "STOP",
    "UNFINALIZED",
    "USABLE_FINISH_REASONS",
    "AgentLoop",
    "RunOutcome",
    "RunProgress",
]
