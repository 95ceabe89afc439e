"""An attempt's trip runs straight: the session and the earlier packets are read once per attempt,
and what the validator is shown of the conversation is exactly what a replay of the log gives."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from core.domain import TaskStatus
from core.evidence import session_messages, settled_transcript, transcript_from_events
from core.store import EventRecord
from core.tasks import service as service_module
from core.tasks.service import TaskService
from core.tools.registry import ToolRegistry
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory


def verdict(status: str) -> str:
    return json.dumps(
        {
            "goal_achievement": "g",
            "completeness": "c",
            "rule_compliance": "r",
            "status": status,
            "score": 0.9 if status == "accepted" else 0.2,
            "issues": [] if status == "accepted" else ["the figure is not in the evidence"],
            "recommended_revision_prompt": "Look the figure up.",
            # an acceptance cites the lookup it rests on (one citing nothing does not count)
            "citations": [
                {"claim": "depth", "evidence_id": "E1", "quote": "10,935 m", "verdict": "supported"}
            ]
            if status == "accepted"
            else [],
        }
    )


def lookup(query: str) -> str:
    """Look a fact up."""
    return f"record for {query}: 10,935 m"


async def workspace(settings: Any) -> Workspace:
    base = await Workspace.open(settings)
    tools = ToolRegistry()
    tools.register(lookup)
    return Workspace(
        settings=base.settings, store=base.store, gateway=base.gateway, tools=tools, bus=base.bus, corpus=None
    )


class Trip:
    """Counts the reads an attempt makes and keeps the history each validation was given."""

    def __init__(self, ws: Workspace, service: TaskService, monkeypatch: pytest.MonkeyPatch) -> None:
        self.session_reads = 0
        self.earlier_reads = 0
        self.validations: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        read_session = ws.store.get_session_events
        self._read_session = read_session

        async def counted_session(*args: Any, **kwargs: Any) -> list[EventRecord]:
            self.session_reads += 1
            return await read_session(*args, **kwargs)

        earlier = service_module.earlier_packets

        async def counted_earlier(*args: Any, **kwargs: Any) -> Any:
            self.earlier_reads += 1
            return await earlier(*args, **kwargs)

        validate: Callable[..., Awaitable[Any]] = service.validation.validate

        async def seen_validate(packet: Any, **kwargs: Any) -> Any:
            # The replay of the log at this moment, read around the counter.
            replayed = transcript_from_events(await read_session(kwargs["session_id"]))
            self.validations.append((kwargs["history"], replayed))
            return await validate(packet, **kwargs)

        monkeypatch.setattr(ws.store, "get_session_events", counted_session)
        monkeypatch.setattr(service_module, "earlier_packets", counted_earlier)
        monkeypatch.setattr(service.validation, "validate", seen_validate)


async def test_each_attempt_reads_the_session_and_earlier_packets_once(
    make_settings: ScriptFactory, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = {
        "model": "agent",
        "turns": [
            {"tool_calls": [{"name": "lookup", "arguments": {"query": "Challenger Deep"}}]},
            {"content": "About 11 km."},
            {"tool_calls": [{"name": "lookup", "arguments": {"query": "Challenger Deep depth"}}]},
            {"content": "10,935 m, per the record [E4]."},
        ],
    }
    validators = [  # each validation is a conversation of its own: told apart by the answer judged
        {"model": "validator", "match": "per the record", "turns": [{"content": verdict("accepted")}]},
        {"model": "validator", "turns": [{"content": verdict("rejected")}]},
    ]
    ws = await workspace(make_settings([agent, *validators], db_url=db_url, max_validation_attempts=2))
    service = TaskService(ws)
    trip = Trip(ws, service, monkeypatch)
    task = await service.run((await service.create("How deep is the Challenger Deep?")).id)
    assert task.status is TaskStatus.AWAITING_FEEDBACK and task.attempt_count == 2
    assert (trip.session_reads, trip.earlier_reads) == (2, 2)  # one of each per attempt
    assert len(trip.validations) == 2
    for given, replayed in trip.validations:
        assert given == replayed
    # The second validation saw both attempts' conversation, tool results included.
    second = json.dumps(trip.validations[1][0])
    assert "About 11 km." in second and "record for Challenger Deep depth" in second
    await ws.close()


async def test_a_repaired_answer_is_what_the_validator_sees_in_the_conversation(
    make_settings: ScriptFactory, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = {"type": "object", "properties": {"depth_m": {"type": "number"}}, "required": ["depth_m"]}
    agent = {
        "model": "agent",
        "turns": [{"content": "About 10,935 metres."}, {"content": '{"depth_m": 10935}'}],
    }
    validator = {"model": "validator", "turns": [{"content": verdict("accepted")}]}
    ws = await workspace(make_settings([agent, validator], db_url=db_url))
    service = TaskService(ws)
    trip = Trip(ws, service, monkeypatch)
    task = await service.run((await service.create("How deep?", output_schema=schema)).id)
    assert task.status is TaskStatus.AWAITING_FEEDBACK
    [(given, replayed)] = trip.validations
    assert given == replayed
    assert given[-1] == {"role": "assistant", "content": '{"depth_m": 10935}'}
    await ws.close()


def test_a_settled_transcript_drops_calls_that_got_no_result() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
    ]
    assert settled_transcript(messages) == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "Let me check."},
    ]
    assert messages[1]["tool_calls"] == [call]  # the run's own transcript is left as it was


async def test_session_messages_is_still_the_replay(make_settings: ScriptFactory, db_url: str) -> None:
    """The first read of an attempt (the agent continues the session) is unchanged."""
    agent = {"model": "agent", "turns": [{"content": "An answer."}]}
    validator = {"model": "validator", "turns": [{"content": verdict("accepted")}]}
    ws = await workspace(make_settings([agent, validator], db_url=db_url))
    service = TaskService(ws)
    task = await service.run((await service.create("Q?")).id)
    assert task.main_session_id is not None
    messages = await session_messages(ws.store, task.main_session_id)
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    await ws.close()


async def test_a_teams_synthesis_shows_the_validator_the_recorded_conversation(
    make_settings: ScriptFactory, db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The synthesis is handed the system prompt as history without recording it: the validator
    sees what the log holds, not what the synthesis was sent."""
    team = tmp_path / "team.json"
    team.write_text(
        json.dumps(
            {
                "mode": "parallel",
                "nodes": [
                    {"id": "a", "role": "surveyor", "task": "Find the depth"},
                    {"id": "b", "role": "surveyor", "task": "Check the depth"},
                ],
            }
        )
    )
    agent = [
        {"model": "agent", "match": "source of truth", "turns": [{"content": "10,935 m, per both nodes."}]},
        {"model": "agent", "match": "node 'a'", "turns": [{"content": "It is 10,935 m."}]},
        {"model": "agent", "match": "node 'b'", "turns": [{"content": "About 10,935 m."}]},
    ]
    validator = {"model": "validator", "turns": [{"content": verdict("accepted")}]}
    # Node verification reads each node's own session and judges it: this counts the main session's trip.
    ws = await workspace(make_settings([*agent, validator], db_url=db_url, verify_team_nodes=False))
    service = TaskService(ws)
    trip = Trip(ws, service, monkeypatch)
    task = await service.run((await service.create("How deep?", team=str(team))).id)
    assert task.status is TaskStatus.AWAITING_FEEDBACK
    assert (trip.session_reads, trip.earlier_reads) == (1, 1)
    [(given, replayed)] = trip.validations
    assert given == replayed
    assert given[-1] == {"role": "assistant", "content": "10,935 m, per both nodes."}
    await ws.close()
