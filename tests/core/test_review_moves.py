"""No dead ends, reopen and undo (issue 15, point 1), through the real task and review services.

The agent and validator are scripted litellm models; a failing revision is a script that runs out
of turns or returns a provider error, exactly what an analyst met at the desk.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from core.domain import FeedbackAction, TaskStatus, ValidationOutcome
from core.domain.facts import AttemptState, EventKind
from core.errors import RefusedAction
from core.tasks.dossier import load_dossier
from core.tasks.history import EntryKind, case_history
from core.tasks.history import decisions as history_decisions
from core.tasks.policy import UNDO_WINDOW, ReadOnlyTask, undo_refusal
from core.tasks.review import ReviewService, can_reopen
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory


def _verdict(status: str, score: float | None = None) -> str:
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


async def _open(
    make_settings: ScriptFactory,
    db_url: str,
    agent: list[dict[str, object]],
    verdicts: list[str],
    **kw: object,
) -> tuple[Workspace, TaskService, ReviewService]:
    settings = make_settings(
        [
            {"model": "agent", "turns": agent},
            {"model": "validator", "turns": [{"content": v} for v in verdicts]},
        ],
        db_url=db_url,
        **kw,
    )
    ws = await Workspace.open(settings)
    service = TaskService(ws)
    return ws, service, ReviewService(service)


async def _statuses(ws: Workspace, task_id: str) -> list[tuple[str, str, str]]:
    events = await ws.store.get_task_events(
        task_id, kinds=[EventKind.TASK_STATUS_CHANGED, EventKind.ANALYST_FEEDBACK_RECORDED]
    )
    return [(e.kind, e.payload["from"], e.payload["to"]) for e in events]


@pytest.mark.parametrize(
    ("verdict", "resting", "outcome"),
    [
        ("insufficient_evidence", TaskStatus.NEEDS_REVIEW, ValidationOutcome.FORCE_ACCEPTED),
        ("accepted", TaskStatus.AWAITING_FEEDBACK, ValidationOutcome.ACCEPTED),
    ],
)
async def test_a_revision_that_runs_out_of_script_returns_to_review(
    make_settings: ScriptFactory, db_url: str, verdict: str, resting: TaskStatus, outcome: ValidationOutcome
) -> None:
    # One agent turn only: the revision's request is past the script's end and fails.
    ws, service, review = await _open(
        make_settings, db_url, [{"content": "The answer."}], [_verdict(verdict, 0.93)]
    )
    task = await service.run((await service.create("Tides?")).id)
    assert task.status is resting
    task = await review.feedback(
        task.id, FeedbackAction.REVISE, expected_version=task.version, prompt="shorter"
    )
    task = await service.run(task.id)
    assert task.status is resting, "a failed revision must not kill the task"
    assert task.validation_outcome is outcome
    assert task.latest_score == pytest.approx(0.93)  # the score of the answer that is back for review
    attempts = await ws.store.list_attempts(task.id)
    assert [a.state for a in attempts] == [AttemptState.FINISHED, AttemptState.FINISHED]
    assert attempts[0].final_output == "The answer." and not attempts[1].final_output
    assert attempts[1].finish_reason == "llm_error"
    moves = await _statuses(ws, task.id)
    assert moves[-1][1:] == ("running", resting.value)
    last = (await ws.store.get_task_events(task.id, kinds=[EventKind.TASK_STATUS_CHANGED]))[-1]
    assert last.payload["reason"].startswith("attempt 2 produced no usable answer (llm_error)")
    # still reviewable: satisfied closes it
    closed = await review.feedback(task.id, FeedbackAction.SATISFIED, expected_version=task.version)
    assert closed.status is TaskStatus.CLOSED
    await ws.close()


async def test_a_retry_with_no_answer_returns_the_rejected_answer_for_review(
    make_settings: ScriptFactory, db_url: str
) -> None:
    # The validator rejects attempt 1; the automatic retry's answer is empty (no usable answer).
    ws, service, review = await _open(
        make_settings, db_url, [{"content": "First try."}, {"content": ""}], [_verdict("rejected")]
    )
    task = await service.run((await service.create("Venus and bees?")).id)
    assert task.status is TaskStatus.NEEDS_REVIEW
    assert task.validation_outcome is ValidationOutcome.FORCE_ACCEPTED
    attempts = await ws.store.list_attempts(task.id)
    assert len(attempts) == 2 and not attempts[1].final_output
    last = (await ws.store.get_task_events(task.id, kinds=[EventKind.TASK_STATUS_CHANGED]))[-1]
    assert last.payload["trigger"] == "revision_failed_to_review"
    assert "attempt 2 produced no usable answer" in last.payload["reason"]
    assert (
        await review.feedback(task.id, FeedbackAction.SATISFIED, expected_version=task.version)
    ).status is (TaskStatus.CLOSED)
    await ws.close()


async def test_a_task_that_never_answered_can_be_revised_or_abandoned(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws, service, review = await _open(
        make_settings, db_url, [{"content": ""}, {"content": "Now an answer."}], [_verdict("accepted")]
    )
    task = await service.run((await service.create("Hard one?")).id)
    assert task.status is TaskStatus.FAILED
    task = await review.feedback(
        task.id, FeedbackAction.REVISE, expected_version=task.version, prompt="try again"
    )
    task = await service.run(task.id)
    assert task.status is TaskStatus.AWAITING_FEEDBACK
    other = await service.run((await service.create("Another?")).id)
    assert other.status is TaskStatus.FAILED
    gone = await review.feedback(other.id, FeedbackAction.ABANDON, expected_version=other.version)
    assert gone.status is TaskStatus.ABANDONED
    await ws.close()


async def test_reopen_needs_a_reason_and_is_recorded_as_feedback(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws, service, review = await _open(make_settings, db_url, [{"content": "Answer."}], [_verdict("accepted")])
    task = await service.run((await service.create("Q?")).id)
    task = await review.feedback(
        task.id, FeedbackAction.SATISFIED, expected_version=task.version, note="fine"
    )
    assert can_reopen(task)
    with pytest.raises(RefusedAction, match="needs a reason"):
        await review.reopen(task.id, reason="  ")
    reopened = await review.reopen(task.id, reason="the source was retracted", expected_version=task.version)
    assert reopened.status is TaskStatus.NEEDS_REVIEW
    feedback = await ws.store.list_feedback(task.id)
    assert [(f.action, f.note) for f in feedback] == [
        ("satisfied", "fine"),
        ("reopen", "the source was retracted"),
    ]
    assert not can_reopen(reopened)
    # a task abandoned before it ever ran reopens as open
    fresh = await service.create("Never ran?")
    fresh = await review.feedback(fresh.id, FeedbackAction.ABANDON, expected_version=fresh.version)
    assert (await review.reopen(fresh.id, reason="wanted after all")).status is TaskStatus.OPEN
    await ws.close()


async def test_undo_of_satisfied_restores_the_status_and_keeps_both_events(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws, service, review = await _open(
        make_settings, db_url, [{"content": "Answer."}], [_verdict("insufficient_evidence")]
    )
    task = await service.run((await service.create("Q?")).id)
    assert task.status is TaskStatus.NEEDS_REVIEW
    closed = await review.feedback(task.id, FeedbackAction.SATISFIED, expected_version=task.version)
    undone = await review.undo(task.id, expected_version=closed.version)
    assert undone.status is TaskStatus.NEEDS_REVIEW
    assert undone.validation_outcome is ValidationOutcome.FORCE_ACCEPTED
    decisions = await ws.store.get_task_events(task.id, kinds=[EventKind.ANALYST_FEEDBACK_RECORDED])
    assert [(e.payload["action"], e.payload["from"], e.payload["to"]) for e in decisions] == [
        ("satisfied", "needs_review", "closed"),
        ("undo", "closed", "needs_review"),
    ]
    assert decisions[1].payload["undoes"]["event_id"] == decisions[0].id
    timeline = case_history(await load_dossier(ws.store, task.id))
    assert timeline[0].kind is EntryKind.CREATED
    assert [h.summary for h in history_decisions(timeline)] == [
        "satisfied: needs_review → closed",
        "undo of satisfied: closed → needs_review",
    ]
    assert any(h.kind is EntryKind.VALIDATION and "insufficient_evidence" in h.summary for h in timeline)
    assert [h.time for h in timeline] == sorted(h.time for h in timeline)
    with pytest.raises(RefusedAction, match="no decision to undo"):
        await review.undo(task.id)
    await ws.close()


async def test_undo_is_refused_once_someone_acted_since(make_settings: ScriptFactory, db_url: str) -> None:
    ws, service, review = await _open(
        make_settings, db_url, [{"content": "Answer."}, {"content": "Better."}], [_verdict("accepted")] * 2
    )
    task = await service.run((await service.create("Q?")).id)
    task = await review.feedback(task.id, FeedbackAction.REVISE, expected_version=task.version, prompt="more")
    task = await service.run(task.id)  # the run acted on the task after the decision
    with pytest.raises(RefusedAction, match="changed after that decision"):
        await review.undo(task.id)
    assert (await ws.store.get_task(task.id)).version == task.version  # nothing changed
    await ws.close()


async def test_undo_of_revise_before_it_runs_clears_the_request(
    make_settings: ScriptFactory, db_url: str
) -> None:
    ws, service, review = await _open(make_settings, db_url, [{"content": "Answer."}], [_verdict("accepted")])
    task = await service.run((await service.create("Q?")).id)
    asked = await review.feedback(
        task.id, FeedbackAction.REVISE, expected_version=task.version, prompt="more"
    )
    undone = await review.undo(asked.id)
    assert undone.status is TaskStatus.AWAITING_FEEDBACK and undone.revision_requested_by is None
    await ws.close()


def test_undo_window_and_version_rule() -> None:
    decided = datetime(2025, 1, 1, tzinfo=UTC)
    task = _task_record(version=5)
    assert undo_refusal(decided, 5, task, decided + timedelta(minutes=1)) is None
    assert undo_refusal(decided, 5, task, decided + UNDO_WINDOW) is None
    assert "older than" in (
        undo_refusal(decided, 5, task, decided + UNDO_WINDOW + timedelta(seconds=1)) or ""
    )
    assert "changed after" in (undo_refusal(decided, 4, task, decided) or "")
    assert timedelta(minutes=1) <= UNDO_WINDOW


async def test_read_only_tasks_refuse_reopen_and_undo(make_settings: ScriptFactory, db_url: str) -> None:
    ws, service, review = await _open(make_settings, db_url, [{"content": "Answer."}], [_verdict("accepted")])
    task = await service.run((await service.create("Q?")).id)
    task = await review.feedback(task.id, FeedbackAction.SATISFIED, expected_version=task.version)
    task = await ws.store.update_task(task.id, read_only=True, origin="bundle abc")
    assert not can_reopen(task)
    for call in (review.reopen(task.id, reason="x"), review.undo(task.id)):
        with pytest.raises(ReadOnlyTask):
            await call
    await ws.close()


def _task_record(version: int):  # type: ignore[no-untyped-def]
    from core.domain.records import TaskRecord

    now = datetime(2025, 1, 1, tzinfo=UTC)
    return TaskRecord(
        id="t" * 32,
        title="t",
        text="t",
        status=TaskStatus.CLOSED,
        validation_outcome=None,
        team_spec=None,
        output_schema=None,
        main_session_id="s",
        attempt_count=1,
        latest_validation_status=None,
        latest_score=None,
        latest_category=None,
        revision_requested_by=None,
        read_only=False,
        origin=None,
        runner=None,
        heartbeat_at=None,
        version=version,
        created_at=now,
        updated_at=now,
    )
