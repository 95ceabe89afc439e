from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from typing import Any

import pytest

from core.config import Settings
from core.domain import TaskStatus, ValidationOutcome, ValidationStatus
from core.domain.facts import AttemptState
from core.errors import ConfigurationError, RefusedAction
from core.tasks.dossier import load_dossier
from core.tasks.policy import decide
from core.tasks.recovery import recover_interrupted
from core.tasks.service import TaskService
from core.tasks.state_machine import Trigger
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory
from tests.core.test_attempt_facts import assert_recorded
from tests.gates import GatedGateway


def _verdict(status: str) -> str:
    return json.dumps(
        {
            "goal_achievement": "g",
            "completeness": "c",
            "rule_compliance": "r",
            "status": status,
            "score": 0.9 if status == "accepted" else 0.5,  # an acceptance below 0.6 does not count
        }
    )


@pytest.mark.parametrize(
    ("status", "done", "expected", "outcome"),
    [
        (ValidationStatus.ACCEPTED, 1, Trigger.VERDICT_ACCEPTED, ValidationOutcome.ACCEPTED),
        (
            ValidationStatus.INSUFFICIENT_EVIDENCE,
            1,
            Trigger.VERDICT_UNCONFIRMED,
            ValidationOutcome.FORCE_ACCEPTED,
        ),
        (ValidationStatus.VALIDATOR_ERROR, 1, Trigger.VERDICT_UNCONFIRMED, ValidationOutcome.FORCE_ACCEPTED),
        (ValidationStatus.REJECTED, 1, Trigger.VERDICT_REJECTED_RETRY, None),
        (ValidationStatus.REJECTED, 2, Trigger.VERDICT_UNCONFIRMED, ValidationOutcome.FORCE_ACCEPTED),
    ],
)
def test_verdict_table(
    status: ValidationStatus, done: int, expected: Trigger, outcome: ValidationOutcome | None
) -> None:
    d = decide(status=status, skipped=False, validations_done=done, max_validations=2)
    assert d.trigger is expected and d.outcome == outcome


def test_force_accepted_is_never_accepted() -> None:
    for status in ValidationStatus:
        for skipped in (False, True):
            d = decide(status=status, skipped=skipped, validations_done=2, max_validations=2, schema_ok=False)
            assert d.outcome != ValidationOutcome.ACCEPTED


async def test_needs_review_never_starts_work(make_settings: ScriptFactory, db_url: str) -> None:
    settings: Settings = make_settings(
        [
            {"model": "agent", "turns": [{"content": "an answer"}]},
            {"model": "validator", "turns": [{"content": _verdict("insufficient_evidence")}]},
        ],
        db_url=db_url,
    )
    ws = await Workspace.open(settings)
    service = TaskService(ws)
    task = await service.run((await service.create("A question?")).id)
    assert task.status is TaskStatus.NEEDS_REVIEW
    with pytest.raises(RefusedAction, match="needs_review"):
        await service.run(task.id)
    assert await recover_interrupted(ws) == []  # recovery leaves review work alone too
    assert (await ws.store.get_task(task.id)).version == task.version
    await ws.close()


async def test_output_schema_is_enforced_on_the_final_answer(
    make_settings: ScriptFactory, db_url: str
) -> None:
    schema = {"type": "object", "properties": {"depth_m": {"type": "number"}}, "required": ["depth_m"]}
    settings = make_settings(
        [
            {
                "model": "agent",
                "turns": [{"content": "About 10,935 metres."}, {"content": '{"depth_m": 10935}'}],
            },
            {"model": "validator", "turns": [{"content": _verdict("accepted")}]},
        ],
        db_url=db_url,
    )
    ws = await Workspace.open(settings)
    service = TaskService(ws)
    task = await service.run((await service.create("How deep?", output_schema=schema)).id)
    assert task.status is TaskStatus.AWAITING_FEEDBACK
    attempt = (await ws.store.list_attempts(task.id))[0]
    assert json.loads(attempt.final_output or "") == {"depth_m": 10935}
    events = await ws.store.get_task_events(task.id)
    failed = [e for e in events if e.kind == "output_schema_validation_failed"]
    assert len(failed) == 1 and failed[0].payload["stage"] == "json-parse"
    # the re-ask stayed out of the transcript: no run event mentions the feedback text
    starts = [e for e in events if e.kind in ("run_started", "llm_response_received")]
    assert all("did not match" not in json.dumps(e.payload) for e in starts)
    await ws.close()


async def test_bad_output_schema_is_refused_before_anything_is_stored(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws = await Workspace.open(make_settings([{"model": "agent", "turns": [{"content": "x"}]}], db_url=db_url))
    service = TaskService(ws)
    with pytest.raises(ConfigurationError, match="invalid output JSON schema"):
        await service.create("How deep?", output_schema={"type": "nonsense"})
    with pytest.raises(ConfigurationError, match="needs some text"):
        await service.create("   ")
    assert await ws.store.list_tasks() == []
    await ws.close()


async def test_an_unexpected_error_never_leaves_the_task_running(
    make_settings: ScriptFactory, db_url: str, tmp_path: Any
) -> None:
    team = tmp_path / "team.json"
    team.write_text(json.dumps({"mode": "parallel", "nodes": [{"id": "a", "role": "r", "task": "t"}]}))
    ws = await Workspace.open(make_settings([{"model": "agent", "turns": [{"content": "x"}]}], db_url=db_url))
    service = TaskService(ws)
    # A row written by an older version holds the template's path, not its content; the template
    # disappears between creation and the run (a task created now carries the content instead).
    task = await ws.store.create_task("Question?", team_spec=str(team))
    team.unlink()
    with pytest.raises(ConfigurationError, match="queued by an older version, which kept only the path"):
        await service.run(task.id)
    after = await ws.store.get_task(task.id)
    assert after.status is TaskStatus.FAILED and after.runner is None
    events = [e for e in await ws.store.get_task_events(task.id) if e.kind == "task_status_changed"]
    assert "stopped on an error" in events[-1].payload["reason"]
    assert (await ws.store.list_attempts(task.id))[0].state == "failed"
    d = await load_dossier(ws.store, task.id)  # the attempt's end is recorded with the task's move
    assert_recorded(d)
    [a] = d.attempts
    assert (d.task.status, a.state, a.validation_outcome) == (TaskStatus.FAILED, AttemptState.FAILED, None)
    await ws.close()


async def test_a_second_runner_is_refused_before_it_writes(make_settings: ScriptFactory, db_url: str) -> None:
    settings = make_settings([{"model": "agent", "turns": [{"content": "x"}]}], db_url=db_url)
    gateway = GatedGateway(settings, "Question")  # the first run's model call never answers
    ws = await Workspace.open(settings, gateway=gateway)
    first, second = TaskService(ws), TaskService(ws)  # two desks on one workspace
    task = await first.create("Question?")
    running = first.start(task.id)
    await gateway.wait_arrived("Question")  # the first runner owns the task and is mid-run
    with pytest.raises(RefusedAction):
        await second.run(task.id)
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    assert len(await ws.store.list_attempts(task.id)) == 1
    await ws.close()


async def test_recovery_never_touches_read_only_tasks(make_settings: ScriptFactory, db_url: str) -> None:
    ws = await Workspace.open(make_settings([{"model": "agent", "turns": [{"content": "x"}]}], db_url=db_url))
    task = await ws.store.create_task("imported", read_only=True)
    await ws.store.update_task(task.id, status=TaskStatus.RUNNING, runner="elsewhere:1")
    assert await recover_interrupted(ws) == []
    assert (await ws.store.get_task(task.id)).status is TaskStatus.RUNNING
    await ws.close()


async def test_team_nodes_keep_the_task_on_a_retry(
    make_settings: ScriptFactory, db_url: str, tmp_path: Any
) -> None:
    team = tmp_path / "team.json"
    team.write_text(
        json.dumps({"mode": "parallel", "nodes": [{"id": "a", "role": "r", "task": "Look up ZEBRA facts"}]})
    )
    rejected = json.dumps(
        {
            "goal_achievement": "g",
            "completeness": "c",
            "rule_compliance": "r",
            "status": "rejected",
            "score": 0.1,
        }
    )
    settings = make_settings(
        [
            {"model": "agent", "match": "source of truth", "turns": [{"content": "synthesis"}] * 4},
            {"model": "agent", "turns": [{"content": "node answer"}]},
            {"model": "validator", "turns": [{"content": rejected}]},
        ],
        db_url=db_url,
    )
    ws = await Workspace.open(settings)
    service = TaskService(ws)
    task = await service.run((await service.create("What about the ORIGINAL-QUESTION?", team=str(team))).id)
    attempts = await ws.store.list_attempts(task.id)
    assert len(attempts) == 2
    node_sessions = [s for s in await ws.store.list_sessions(task.id) if s.kind == "node"]
    for session in node_sessions:
        started = (await ws.store.get_session_events(session.id, kinds=["run_started"]))[0]
        assert "ORIGINAL-QUESTION" in json.dumps(started.payload["input_messages"])
    assert len(node_sessions) == 2
    await ws.close()


async def test_dossier_flags_force_acceptance_and_interruption(
    make_settings: ScriptFactory, db_url: str
) -> None:
    from core.tasks.dossier import load_dossier

    settings = make_settings(
        [
            {"model": "agent", "turns": [{"content": "an answer"}]},
            {"model": "validator", "turns": [{"content": _verdict("insufficient_evidence")}]},
        ],
        db_url=db_url,
    )
    ws = await Workspace.open(settings)
    service = TaskService(ws)
    done = await service.run((await service.create("A question?")).id)
    dossier = await load_dossier(ws.store, done.id)
    assert dossier.attempt_force_accepted(dossier.attempts[0])
    assert not dossier.attempt_interrupted(dossier.attempts[0])

    crashed = await ws.store.create_task("Another question?")
    dead_runner = f"{socket.gethostname()}:{2**22 + 7}"  # this host, a pid no process has
    await ws.store.update_task(crashed.id, status=TaskStatus.RUNNING, runner=dead_runner, attempt_count=1)
    await ws.store.create_attempt(crashed.id, 1, trigger="initial", prompt="p")
    assert [t.id for t in await recover_interrupted(ws)] == [crashed.id]
    dossier = await load_dossier(ws.store, crashed.id)
    assert dossier.attempt_interrupted(dossier.attempts[0])
    assert not dossier.attempt_force_accepted(dossier.attempts[0])
    await ws.close()
