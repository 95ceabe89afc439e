"""Every path that ends an attempt records the attempt's state and outcome itself, with the task's move.

Readers (``show``, the desk, the audit report) take those facts as recorded; these tests run each
ending for real (scripted provider, real SQLite file) and check what was written, and that the
dossier shows the same outcome for the attempt as the task carries.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from core.domain import FeedbackAction, TaskStatus, ValidationOutcome
from core.domain.facts import AttemptState, FinishReason
from core.events import BusEvent, RunProgress
from core.store import AttemptRecord
from core.tasks.dossier import TaskDossier, load_dossier
from core.tasks.review import ReviewService
from core.tasks.service import RunAbandoned, TaskService
from core.tools.registry import ToolRegistry, ToolResult
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory

FORCE = ValidationOutcome.FORCE_ACCEPTED


def verdict(status: str, score: float | None = None) -> str:
    score = score if score is not None else (0.9 if status == "accepted" else 0.5)  # a coherent acceptance
    return json.dumps(
        {
            "goal_achievement": "g",
            "completeness": "c",
            "rule_compliance": "r",
            "status": status,
            "score": score,
        }
    )


def validator(*statuses: str) -> dict[str, Any]:
    return {"model": "validator", "turns": [{"content": verdict(s)} for s in statuses]}


def assert_recorded(dossier: TaskDossier) -> None:
    """What the desk relies on: every ended attempt has a time, and the latest one's outcome is the task's."""
    for a in dossier.attempts:
        assert (a.state is AttemptState.RUNNING) == (a.finished_at is None), a
    if not dossier.task.status.is_execution_active and dossier.attempts:
        assert dossier.attempts[-1].validation_outcome == dossier.task.validation_outcome
    for a in dossier.attempts:
        assert TaskDossier.attempt_force_accepted(a) is (a.validation_outcome is FORCE)


async def run_task(ws: Workspace, text: str = "A question?", **create: Any) -> TaskDossier:
    service = TaskService(ws)
    task = await service.run((await service.create(text, **create)).id)
    dossier = await load_dossier(ws.store, task.id)
    assert_recorded(dossier)
    return dossier


async def test_accepted_attempt_is_finished_and_accepted(make_settings: ScriptFactory, db_url: str) -> None:
    ws = await Workspace.open(
        make_settings(
            [{"model": "agent", "turns": [{"content": "an answer"}]}, validator("accepted")], db_url=db_url
        )
    )
    d = await run_task(ws)
    assert d.task.status is TaskStatus.AWAITING_FEEDBACK and d.task.runner is None
    [a] = d.attempts
    assert (a.state, a.validation_outcome, a.validation_status) == (
        AttemptState.FINISHED,
        ValidationOutcome.ACCEPTED,
        "accepted",
    )
    await ws.close()


async def test_rejected_then_delivered_records_each_attempt(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws = await Workspace.open(
        make_settings(
            [
                {"model": "agent", "turns": [{"content": "first"}, {"content": "second"}]},
                validator("rejected", "rejected"),
            ],
            db_url=db_url,
            max_validation_attempts=2,
        )
    )
    d = await run_task(ws)
    assert (d.task.status, d.task.validation_outcome) == (TaskStatus.NEEDS_REVIEW, FORCE)
    first, second = d.attempts
    # The rejected attempt ended when the retry was queued: finished, rejected, and no outcome of its own.
    assert (first.state, first.validation_status, first.validation_outcome) == (
        AttemptState.FINISHED,
        "rejected",
        None,
    )
    assert (second.state, second.validation_status, second.validation_outcome) == (
        AttemptState.FINISHED,
        "rejected",
        FORCE,
    )
    assert first.finished_at is not None and second.started_at >= first.finished_at
    await ws.close()


@pytest.mark.parametrize(
    ("turn", "reason"),
    [({"content": ""}, FinishReason.EMPTY_RESPONSE), ({"error": "server_error"}, FinishReason.LLM_ERROR)],
    ids=["no-usable-answer", "provider-failure"],
)
async def test_a_run_without_an_answer_finishes_with_no_outcome(
    make_settings: ScriptFactory, db_url: str, turn: dict[str, Any], reason: FinishReason
) -> None:
    ws = await Workspace.open(
        make_settings([{"model": "agent", "turns": [turn]}], db_url=db_url, llm_num_retries=0)
    )
    d = await run_task(ws)
    assert (d.task.status, d.task.validation_outcome, d.task.runner) == (TaskStatus.FAILED, None, None)
    [a] = d.attempts
    assert (a.state, a.finish_reason, a.validation_outcome) == (AttemptState.FINISHED, reason, None)
    await ws.close()


# ---------------------------------------------------------------------- runs held open by a tool
class Gate:
    """A tool that holds the run until the test lets it go: cancellation lands at a known point."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def gate(self, note: str) -> ToolResult:
        """Wait for the test."""
        self.entered.set()
        await self.release.wait()
        return ToolResult(content=f"gate passed: {note}")


GATED_AGENT = {
    "model": "agent",
    "turns": [{"tool_calls": [{"name": "gate", "arguments": {"note": "n"}}]}, {"content": "the answer"}],
}


async def gated(settings: Any) -> tuple[Workspace, Gate]:
    base = await Workspace.open(settings)
    gate = Gate()
    tools = ToolRegistry()
    tools.register(gate.gate, name="gate")
    ws = Workspace(
        settings=base.settings, store=base.store, gateway=base.gateway, tools=tools, bus=base.bus, corpus=None
    )
    return ws, gate


async def only_attempt(ws: Workspace, task_id: str) -> AttemptRecord:
    [a] = await ws.store.list_attempts(task_id)
    return a


async def test_cancel_records_a_cancelled_attempt(make_settings: ScriptFactory, db_url: str) -> None:
    ws, gate = await gated(make_settings([GATED_AGENT, validator("accepted")], db_url=db_url))
    service = TaskService(ws)
    task = await service.create("Question?")
    service.start(task.id)
    await gate.entered.wait()
    assert await service.cancel(task.id)
    a = await only_attempt(ws, task.id)
    assert (a.state, a.validation_outcome) == (AttemptState.CANCELLED, None) and a.finished_at is not None
    # Cancel alone does not decide where the task goes: abandon moves it, or recovery after a restart.
    assert (await ws.store.get_task(task.id)).status is TaskStatus.RUNNING
    await ws.close()


async def test_abandon_mid_run_cancels_the_attempt_with_the_move(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws, gate = await gated(make_settings([GATED_AGENT, validator("accepted")], db_url=db_url))
    service = TaskService(ws)
    task = await service.create("Question?")
    service.start(task.id)
    await gate.entered.wait()
    current = await ws.store.get_task(task.id)
    await ReviewService(service).feedback(task.id, FeedbackAction.ABANDON, expected_version=current.version)
    d = await load_dossier(ws.store, task.id)
    assert_recorded(d)
    assert d.task.status is TaskStatus.ABANDONED
    assert (d.attempts[0].state, d.attempts[0].validation_outcome) == (AttemptState.CANCELLED, None)
    assert d.feedback[0].attempt_id == d.attempts[0].id
    await ws.close()


async def test_abandon_from_another_process_ends_the_attempt_there(
    make_settings: ScriptFactory, db_url: str
) -> None:
    settings = make_settings([GATED_AGENT, validator("accepted")], db_url=db_url)
    ws, gate = await gated(settings)
    other = await Workspace.open(settings)  # a second desk on the same workspace file
    runner = TaskService(ws)
    task = await runner.create("Question?")
    handle = runner.start(task.id)
    await gate.entered.wait()
    current = await other.store.get_task(task.id)
    await ReviewService(TaskService(other)).feedback(
        task.id, FeedbackAction.ABANDON, expected_version=current.version
    )
    # Written by the abandoning desk, in the same transaction as the task's move.
    a = await only_attempt(other, task.id)
    assert (a.state, a.validation_outcome) == (AttemptState.CANCELLED, None)
    gate.release.set()
    with pytest.raises(RunAbandoned):
        await handle  # the runner's next move finds the task abandoned and stops
    d = await load_dossier(ws.store, task.id)
    assert_recorded(d)
    assert d.task.status is TaskStatus.ABANDONED and d.attempts[0].state is AttemptState.CANCELLED
    assert any(e.kind == "tool_result_recorded" for e in d.events)  # its evidence is kept
    await other.close()
    await ws.close()


async def test_progress_reaches_the_bus_per_run(make_settings: ScriptFactory, db_url: str) -> None:
    """The run context carries the bus; progress sinks are per run and still announce the attempt."""
    ws = await Workspace.open(
        make_settings(
            [{"model": "agent", "turns": [{"content": "an answer"}]}, validator("accepted")], db_url=db_url
        )
    )
    seen: list[BusEvent] = []
    ws.bus.subscribe(seen.append)
    d = await run_task(ws)
    phases = [e.phase for e in seen if isinstance(e, RunProgress) and e.task_id == d.task.id]
    assert phases[0] == "starting" and "llm" in phases and "validating" in phases
    await ws.close()
