"""The run context: what every run needs from its workspace, built once and passed as one value.

The agent loop, the team scheduler and validation each used to take the store, the gateway, the
tools and the settings as four arguments, and each caller re-assembled that group by hand. One
frozen value keeps them from drifting apart (a node run cannot end up with another workspace's
store) and lets a new shared dependency be added in one place. Progress sinks are not part of it:
they belong to one run, so they are passed per run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from core.config import Settings
from core.events import EventBus
from core.llm import LLMGateway
from core.store import Store
from core.tools.registry import ToolRegistry


@dataclass(frozen=True, slots=True)
class RunContext:
    store: Store
    gateway: LLMGateway
    tools: ToolRegistry
    settings: Settings
    bus: EventBus

    def with_tools(self, tools: ToolRegistry) -> RunContext:
        """The same context with a narrower tool set (a team node sees only the tools it names)."""
        return dataclasses.replace(self, tools=tools)


__all__ = ["RunContext"]
