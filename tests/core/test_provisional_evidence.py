"""Attempts without a packet (running, cancelled, crashed) still show the evidence they recorded."""

from __future__ import annotations

from typing import Any

from core.agent import AgentLoop
from core.domain.facts import AttemptState
from core.events import EventBus
from core.llm import LLMGateway
from core.runtime import RunContext
from core.store import Store
from core.tasks.dossier import load_dossier
from core.tools.registry import ToolRegistry, ToolResult
from tests.core.conftest import ScriptFactory


def _registry() -> ToolRegistry:
    reg = ToolRegistry()

    async def lookup(query: str) -> ToolResult:
        """Look something up."""
        return ToolResult(content=f"result for {query}", title=query)

    reg.register(lookup)
    return reg


async def _attempt_with_a_run(store: Store, make_settings: ScriptFactory) -> tuple[str, Any]:
    settings = make_settings(
        [
            {
                "model": "agent",
                "turns": [
                    {"tool_calls": [{"name": "lookup", "arguments": {"query": "tides"}}]},
                    {"content": "answer"},
                ],
            }
        ]
    )
    task = await store.create_task("question")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="question")
    session = await store.create_session(task_id=task.id, kind="main")
    ctx = RunContext(
        store=store,
        gateway=LLMGateway(settings, retry_backoff_s=0.001),
        tools=_registry(),
        settings=settings,
        bus=EventBus(),
    )
    await AgentLoop(ctx).run(
        session_id=session.id,
        history=[],
        new_messages=[{"role": "user", "content": "question"}],
        model="scripted/agent",
        task_id=task.id,
        attempt_id=attempt.id,
    )
    await store.flush()
    return task.id, attempt


async def test_an_interrupted_attempt_shows_its_recorded_tool_results(
    store: Store, make_settings: ScriptFactory
) -> None:
    task_id, attempt = await _attempt_with_a_run(store, make_settings)
    await store.update_attempt(attempt.id, state=AttemptState.INTERRUPTED)
    dossier = await load_dossier(store, task_id)
    assert dossier.packet(1) is None
    packet = dossier.evidence_packet(1)
    assert packet is not None and packet.main_run is not None
    assert [t.content for t in packet.main_run.tool_results] == ["result for tides"]
    assert packet.evidence_id_start == 1 and packet.final_output == "answer"


async def test_a_running_attempt_always_has_a_packet_and_a_finished_one_without_runs_none(
    store: Store,
) -> None:
    task = await store.create_task("question")
    await store.create_attempt(task.id, 1, trigger="initial", prompt="question")
    dossier = await load_dossier(store, task.id)
    running = dossier.evidence_packet(1)
    assert running is not None and running.main_run is None  # work under way: never "no packet"
    await store.update_attempt(dossier.attempts[0].id, state=AttemptState.CANCELLED)
    assert (await load_dossier(store, task.id)).evidence_packet(1) is None
