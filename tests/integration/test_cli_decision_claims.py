"""Decisions from the command line respect claims, on both engines.

``feedback``, ``override``, ``undo`` and ``reopen`` on a task a colleague holds are refused in one
line naming the holder and when their lease ends, and change nothing; ``--take-over`` takes the
task as the desk does (recorded) and then decides.
"""

from __future__ import annotations

import asyncio

from core.store import Store
from tests.integration.conftest import Desk, verdict


async def _facts(url: str, task_id: str) -> tuple[str, int, list[str], str | None]:
    """Status, version, event kinds and current claim holder, read through a store of its own."""
    from core.tasks.claims import Claims

    store = await Store.open(url)
    try:
        task = await store.get_task(task_id)
        kinds = [str(e.kind) for e in await store.get_task_events(task_id)]
        holder = await Claims(store).holder(task_id)
        return task.status.value, task.version, kinds, holder.reviewer if holder else None
    finally:
        await store.close()


async def _taken_over(url: str, task_id: str) -> list[dict[str, object]]:
    store = await Store.open(url)
    try:
        return [e.payload for e in await store.get_task_events(task_id, kinds=["claim_taken_over"])]
    finally:
        await store.close()


_DECISIONS = ("analyst_feedback_recorded", "analyst_verdict_recorded")


def _decisions(kinds: list[str]) -> list[str]:
    return [k for k in kinds if k in _DECISIONS]


def test_a_decision_on_a_task_someone_else_holds_is_refused_unless_taken_over(
    desk: Desk, db_url: str
) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides come from the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    db = ("--db", db_url)
    task = desk.cli_json("run", "What causes tides?", *db)
    task_id = task["id"]
    assert task["status"] == "awaiting_feedback"
    desk.cli_json("claim", task_id, "--reviewer", "ana", *db)

    desk.env(reviewer="bob")
    before = asyncio.run(_facts(db_url, task_id))
    refusals = [
        ("feedback", task_id[:8], "satisfied"),
        ("override", task_id, "--status", "rejected", "--note", "no source"),
        ("reopen", task_id, "--reason", "again"),
        ("undo", task_id),
    ]
    for args in refusals:
        code, _out, err = desk.cli(*args, *db)
        assert code == 3, (args, err)
        assert err.count("\n") == 1, err  # one line
        assert "claimed by ana until" in err and "lease ends" in err and "--take-over" in err, err
    assert asyncio.run(_facts(db_url, task_id)) == before  # nothing changed, ana still holds it

    done = desk.cli_json("feedback", task_id, "satisfied", "--take-over", *db)
    assert done["status"] == "closed"
    status, _version, kinds, holder = asyncio.run(_facts(db_url, task_id))
    assert (status, holder) == ("closed", "bob")  # the claim stays with who took it, as on the desk
    assert kinds.index("claim_taken_over") < kinds.index("analyst_feedback_recorded")
    (taken,) = asyncio.run(_taken_over(db_url, task_id))
    assert (taken["reviewer"], taken["from_reviewer"]) == ("bob", "ana")

    # bob holds it now: his own next decision needs no take-over; ana's is refused naming bob
    assert desk.cli_json("override", task_id, "--status", "accepted", *db)["status"] == "accepted"
    desk.env(reviewer="ana")
    code, _out, err = desk.cli("undo", task_id, *db)
    assert code == 3 and "claimed by bob until" in err
    assert _decisions(asyncio.run(_facts(db_url, task_id))[2]) == list(_DECISIONS)


def test_a_decision_on_an_unclaimed_task_leaves_no_claim_behind(desk: Desk, db_url: str) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Everest is 8,849 m."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    db = ("--db", db_url)
    task_id = desk.cli_json("run", "How high is Everest?", *db)["id"]
    desk.env(reviewer="carl")
    assert desk.cli_json("feedback", task_id, "satisfied", *db)["status"] == "closed"
    status, _version, kinds, holder = asyncio.run(_facts(db_url, task_id))
    assert (status, holder) == ("closed", None)  # held only for the decision, released quietly
    assert "claim_released" not in kinds and "claim_taken_over" not in kinds
    # --take-over on a free task is just a decision (nobody to take it from, nothing recorded)
    assert desk.cli_json("reopen", task_id, "--reason", "check again", "--take-over", *db)
    assert "claim_taken_over" not in asyncio.run(_facts(db_url, task_id))[2]
