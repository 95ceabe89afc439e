"""Bytes of event log for a 20-turn run with 10 tools: compact against full request snapshots.

Aim: compact snapshots make the log at least 10x smaller. Both runs happen in this process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir, scripted_settings
from core.agent import AgentLoop
from core.events import EventBus
from core.llm import LLMGateway
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry

TURNS = 20
TOOLS = 10


def _registry() -> ToolRegistry:
    reg = ToolRegistry()
    for i in range(TOOLS):

        def tool(query: str, limit: int = 5, _i: int = i) -> str:
            """Search one of the analyst's sources and return matching passages with their ids."""
            return f"source {_i}: {limit} passages for {query}"

        tool.__name__ = f"source_{i}"
        reg.register(tool)
    return reg


def _event_bytes(events: list) -> tuple[int, int]:  # type: ignore[type-arg]
    snap = total = 0
    for e in events:
        size = len(json.dumps(e.payload, ensure_ascii=False)) + len((e.content or "").encode())
        total += size
        if e.kind == "llm_request_snapshotted":
            snap += size
    return total, snap


async def measure(full: bool) -> tuple[int, int]:
    folder = scratch_dir()
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": f"source_{i % TOOLS}", "arguments": {"query": f"question part {i}"}}]}
        for i in range(TURNS - 1)
    ]
    turns.append({"content": "final answer"})
    settings = scripted_settings(
        folder,
        [{"model": "agent", "turns": turns}],
        max_tool_iterations=TURNS,
        debug_full_request_snapshots=full,
    )
    store = await Store.open(settings.db_url)
    ctx = RunContext(
        store=store, gateway=LLMGateway(settings), tools=_registry(), settings=settings, bus=EventBus()
    )
    loop = AgentLoop(ctx)
    session = await store.create_session(task_id=None, kind="main")
    system = {"role": "system", "content": "You are a careful research agent. " * 40}
    out = await loop.run(
        session_id=session.id,
        history=[],
        new_messages=[system, {"role": "user", "content": "Investigate the question thoroughly."}],
        model="scripted/agent",
    )
    assert out.finish_reason == "stop"
    sizes = _event_bytes(await store.get_session_events(session.id))
    await store.close()
    return sizes


async def main() -> None:
    compact_total, compact_snap = await measure(full=False)
    full_total, full_snap = await measure(full=True)
    print(f"{TURNS}-turn run, {TOOLS} tools")
    print(f"  compact: event log {compact_total:>9,} bytes (snapshots {compact_snap:>9,})")
    print(f"  full:    event log {full_total:>9,} bytes (snapshots {full_snap:>9,})")
    print(f"  snapshot bytes ratio full/compact: {full_snap / compact_snap:.1f}x  (aim >= 10x)")
    print(f"  whole event log ratio full/compact: {full_total / compact_total:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
