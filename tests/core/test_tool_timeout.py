"""Every tool call has a time limit: a hung tool becomes an error result and the run goes on.

The limits here are small only so that a hang is bounded; every assertion is on results and
thread state, never on how long anything took.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core.agent import AgentLoop
from core.config import Settings
from core.domain.facts import FinishReason
from core.events import EventBus
from core.evidence import build_run_evidence
from core.llm import LLMGateway
from core.runtime import RunContext
from core.store import Store
from core.tools import ToolRegistry, build_default_registry
from tests.core.conftest import ScriptFactory

LIMIT_S = 0.2


@pytest.fixture
def never_set() -> Iterator[threading.Event]:
    """An event the tool waits on forever; released only at teardown so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def _blocking_registry(gate: threading.Event, timeout_s: float = LIMIT_S) -> ToolRegistry:
    reg = ToolRegistry(timeout_s=timeout_s)

    def wait_forever(query: str) -> str:
        """Block on an event nobody sets, like a read from a FIFO with no writer."""
        gate.wait()
        return f"late answer for {query}"

    def quick(query: str) -> str:
        """Answer at once."""
        return f"quick answer for {query}"

    reg.register(wait_forever)
    reg.register(quick)
    return reg


def _tool_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"tool-{name}"]


async def test_blocking_sync_tool_returns_a_timeout_error_and_its_thread_is_abandoned(
    never_set: threading.Event,
) -> None:
    reg = _blocking_registry(never_set)
    result = await reg.execute("wait_forever", {"query": "q"})
    assert result.is_error
    assert "wait_forever did not finish within the 0.2 s tool time limit (tool_timeout_s)" in result.content
    assert result.data == {"timed_out": True, "timeout_s": LIMIT_S}
    threads = _tool_threads("wait_forever")
    assert threads and all(t.daemon for t in threads)  # cannot keep the interpreter from exiting

    # the registry still works, and a late answer from the abandoned thread is dropped quietly
    assert (await reg.execute("quick", {"query": "q"})).content == "quick answer for q"
    never_set.set()
    for t in threads:
        t.join()
    await asyncio.sleep(0)  # let the thread's call_soon_threadsafe callback run on this loop


async def test_blocking_async_tool_is_cancelled_on_timeout() -> None:
    cancelled = asyncio.Event()

    async def hang() -> str:
        """Wait for ever."""
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return "never"

    reg = ToolRegistry(timeout_s=LIMIT_S)
    reg.register(hang)
    result = await reg.execute("hang", {})
    assert result.is_error and "hang did not finish within the 0.2 s tool time limit" in result.content
    await cancelled.wait()


async def test_an_async_tool_slow_to_honour_cancellation_does_not_hold_its_call_past_the_limit() -> None:
    released = asyncio.Event()

    async def stubborn() -> str:
        """Wait for ever; once cancelled, clean up for as long as the test says."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await released.wait()
            raise
        return "never"

    reg = ToolRegistry(timeout_s=LIMIT_S)
    reg.register(stubborn)
    call = asyncio.ensure_future(reg.execute("stubborn", {}))
    # The 30 s bound only keeps a failure from hanging the suite; the clean-up is released after it.
    done, _ = await asyncio.wait({call}, timeout=30)
    released.set()
    assert done, "the call waited for the tool's clean-up instead of returning at its limit"
    assert call.result().is_error and "stubborn did not finish within" in call.result().content


async def test_a_timeout_raised_by_the_tool_itself_is_an_ordinary_failure() -> None:
    async def times_out() -> str:
        """Fail with the tool's own timeout."""
        raise TimeoutError("upstream took too long")

    reg = ToolRegistry(timeout_s=30)
    reg.register(times_out)
    result = await reg.execute("times_out", {})
    assert result.is_error
    assert result.content == "times_out failed: TimeoutError: upstream took too long"


async def test_cancelling_a_run_still_cancels_a_blocked_sync_call(never_set: threading.Event) -> None:
    entered = threading.Event()

    def blocked() -> str:
        """Say it started, then block."""
        entered.set()
        never_set.wait()
        return "late"

    reg = ToolRegistry(timeout_s=3600)
    reg.register(blocked)
    task = asyncio.create_task(reg.execute("blocked", {}))
    await asyncio.to_thread(entered.wait)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_default_registry_and_subsets_use_the_tool_timeout_setting() -> None:
    settings = Settings(db_url="sqlite+aiosqlite:///:memory:", tool_timeout_s=7.5)
    reg = build_default_registry(settings, None)
    assert reg.timeout_s == 7.5
    assert reg.subset(["search_corpus"]).timeout_s == 7.5
    assert ToolRegistry().timeout_s == Settings.model_fields["tool_timeout_s"].default
    with pytest.raises(ValueError, match="positive"):
        ToolRegistry(timeout_s=0)


async def test_run_with_a_hung_tool_goes_on_to_a_final_answer(
    store: Store,
    make_settings: ScriptFactory,
    gateway_for: Callable[[Settings], LLMGateway],
    never_set: threading.Event,
) -> None:
    turns: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {"name": "wait_forever", "arguments": {"query": "stuck"}},
                {"name": "quick", "arguments": {"query": "fine"}},
            ]
        },
        {"content": "answered without the stuck tool"},
    ]
    settings = make_settings([{"model": "agent", "turns": turns}])
    session = await store.create_session(task_id=None, kind="main")
    loop = AgentLoop(
        RunContext(
            store=store,
            gateway=gateway_for(settings),
            tools=_blocking_registry(never_set),
            settings=settings,
            bus=EventBus(),
        )
    )
    outcome = await loop.run(
        session_id=session.id,
        history=[],
        new_messages=[{"role": "user", "content": "question"}],
        model="scripted/agent",
    )
    assert (
        outcome.finish_reason is FinishReason.STOP
        and outcome.output_text == "answered without the stuck tool"
    )
    evidence = await build_run_evidence(store, outcome.session_id, outcome.run_id)
    stuck, fine = evidence.tool_results
    assert stuck.is_error and "wait_forever did not finish within the 0.2 s tool time limit" in stuck.content
    assert stuck.event_payload["data"]["timed_out"] is True
    assert not fine.is_error and fine.content == "quick answer for fine"
