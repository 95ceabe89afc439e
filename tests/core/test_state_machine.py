"""The task state machine: stateful property tests plus the architecture's tables pinned exactly.

The stateful machine fires any trigger, legal or not, so it covers both what the table allows and
what it must refuse; the plain tests pin the flag table and the data-flow moves so a change to
either is a deliberate, reviewed edit rather than drift.
"""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from core.domain import TaskStatus
from core.errors import RefusedAction
from core.tasks import TRANSITIONS, IllegalTransition, Trigger, allowed_triggers, can, next_status
from core.tasks.state_machine import undo_trigger

S = TaskStatus
T = Trigger

TERMINAL = {S.CLOSED, S.ABANDONED}  # failed is open: it accepts a revision (issue 32)
REVIEW = {S.NEEDS_REVIEW, S.AWAITING_FEEDBACK}
FEEDBACK = {T.FEEDBACK_SATISFIED, T.FEEDBACK_REVISE, T.FEEDBACK_ABANDON}
REOPEN = {T.REOPEN, T.REOPEN_UNUSABLE, T.REOPEN_UNRUN}
UNDO = {t for t in Trigger if t.value.startswith("undo_to_")}
ANALYST = FEEDBACK | REOPEN | UNDO

HYPO = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

statuses = st.sampled_from(list(TaskStatus))
triggers = st.sampled_from(list(Trigger))


class TaskLifecycle(RuleBasedStateMachine):
    """One task driven by arbitrary triggers; the model of "legal" is the table itself plus the invariants."""

    def __init__(self) -> None:
        super().__init__()
        self.status = S.OPEN
        self.moves: list[tuple[TaskStatus, Trigger, TaskStatus]] = []

    @initialize(start=statuses)
    def start_anywhere(self, start: TaskStatus) -> None:
        # Starting from every status (not only open) lets short runs reach deep states.
        self.status = start

    def _fire(self, trigger: Trigger) -> None:
        before = self.status
        if can(before, trigger):
            after = next_status(before, trigger)
            assert after == TRANSITIONS[(before, trigger)]
            if before in TERMINAL:
                assert trigger.is_analyst_feedback, f"terminal {before} left via non-analyst {trigger}"
            if before in REVIEW and after != before:
                assert trigger.is_analyst_feedback, f"{before} left via non-feedback {trigger}"
            self.moves.append((before, trigger, after))
            self.status = after
        else:
            with pytest.raises(IllegalTransition) as info:
                next_status(before, trigger)
            err = info.value
            message = str(err)
            assert f"'{before.value}'" in message
            assert trigger.value in message
            targets = {to for (_, t), to in TRANSITIONS.items() if t is trigger}
            assert any(f"'{to.value}'" in message for to in targets) or not targets
            assert err.current is before
            assert err.trigger is trigger
            assert isinstance(err, RefusedAction)
            assert self.status is before, "a refused trigger changed the status"

    @rule(trigger=triggers)
    def fire_any(self, trigger: Trigger) -> None:
        self._fire(trigger)

    @rule(data=st.data())
    def fire_legal(self, data: st.DataObject) -> None:
        """Prefer legal moves too, so runs travel through the graph instead of bouncing off it."""
        legal = sorted(allowed_triggers(self.status))
        if legal:
            self._fire(data.draw(st.sampled_from(legal)))

    @invariant()
    def flags_are_consistent(self) -> None:
        s = self.status
        assert not (s.requires_user_action and s.is_execution_active)
        assert s.is_terminal == (s in TERMINAL)
        assert s.is_open == (not s.is_terminal)

    @invariant()
    def can_matches_allowed(self) -> None:
        for t in Trigger:
            assert can(self.status, t) == (t in allowed_triggers(self.status))


TaskLifecycle.TestCase.settings = settings(HYPO, stateful_step_count=30)
TestTaskLifecycle = TaskLifecycle.TestCase


# ---- plain properties over the whole table ------------------------------------------------------


@HYPO
@given(status=statuses, trigger=triggers)
def test_illegal_trigger_raises_and_names_both_ends(status: TaskStatus, trigger: Trigger) -> None:
    if can(status, trigger):
        assert next_status(status, trigger) is TRANSITIONS[(status, trigger)]
        return
    with pytest.raises(IllegalTransition, match=f"from '{status.value}' to '[^']+' \\({trigger.value}\\)"):
        next_status(status, trigger)


@pytest.mark.parametrize("terminal", sorted(TERMINAL))
def test_terminal_statuses_are_left_only_by_the_analyst(terminal: TaskStatus) -> None:
    """No run, verdict or recovery ever moves a finished task; only an analyst's decision does."""
    allowed = allowed_triggers(terminal)
    assert allowed, f"{terminal} is a dead end"
    assert all(t.is_analyst_feedback for t in allowed), allowed
    for t in Trigger:
        if not t.is_analyst_feedback:
            assert not can(terminal, t)


def test_no_dead_ends_failed_can_be_revised_or_abandoned() -> None:
    assert next_status(S.FAILED, T.FEEDBACK_REVISE) is S.NEEDS_REVISION
    assert next_status(S.FAILED, T.FEEDBACK_ABANDON) is S.ABANDONED
    assert not can(S.FAILED, T.FEEDBACK_SATISFIED)  # nothing usable to be satisfied with
    assert walk(S.FAILED, T.FEEDBACK_REVISE, T.START) is S.RUNNING


@pytest.mark.parametrize("src", [S.CLOSED, S.ABANDONED])
def test_closed_and_abandoned_reopen_by_what_they_hold(src: TaskStatus) -> None:
    assert next_status(src, T.REOPEN) is S.NEEDS_REVIEW
    assert next_status(src, T.REOPEN_UNUSABLE) is S.FAILED
    assert can(src, T.REOPEN_UNRUN) == (src is S.ABANDONED)  # only an abandoned task may never have run


@pytest.mark.parametrize("src", [S.RUNNING, S.VALIDATING])
def test_a_failed_revision_returns_to_review(src: TaskStatus) -> None:
    assert next_status(src, T.REVISION_FAILED_TO_REVIEW) is S.NEEDS_REVIEW
    assert next_status(src, T.REVISION_FAILED_TO_FEEDBACK) is S.AWAITING_FEEDBACK
    # the whole loop: reviewed answer, revise, the new attempt fails, the answer is reviewable again
    for origin in REVIEW:
        back = walk(origin, T.FEEDBACK_REVISE, T.START, T.REVISION_FAILED_TO_REVIEW)
        assert back is S.NEEDS_REVIEW and can(back, T.FEEDBACK_SATISFIED)


def test_every_decision_has_its_undo_and_undo_is_exact() -> None:
    """Undo is the inverse of one decision edge, from and to resting statuses only."""
    decisions = [(src, t, dst) for (src, t), dst in TRANSITIONS.items() if t.is_decision]
    assert {t for _, t, _ in decisions} == FEEDBACK | REOPEN
    for src, t, dst in decisions:
        if src.is_execution_active:  # abandoning a run: the run cannot be brought back by undo
            assert src.value not in {u.value.removeprefix("undo_to_") for u in UNDO}
            continue
        assert next_status(dst, undo_trigger(src)) is src, (src, t, dst)
    for (src, t), dst in TRANSITIONS.items():
        if t.is_undo:
            assert any(d == src and s == dst for s, _, d in decisions), (src, t, dst)
            assert not t.is_decision


@HYPO
@given(status=statuses, data=st.data())
def test_decide_then_undo_round_trips(status: TaskStatus, data: st.DataObject) -> None:
    decisions = sorted(t for t in allowed_triggers(status) if t.is_decision)
    if not decisions or status.is_execution_active:
        return
    decision = data.draw(st.sampled_from(decisions))
    after = next_status(status, decision)
    assert next_status(after, undo_trigger(status)) is status


def test_review_statuses_are_left_only_by_analyst_feedback() -> None:
    for (src, trig), dst in TRANSITIONS.items():
        if src in REVIEW and dst != src:
            assert trig.is_analyst_feedback, (src, trig, dst)
    # and every feedback trigger is really offered there: the analyst is never stuck
    for status in REVIEW:
        assert FEEDBACK <= allowed_triggers(status) <= FEEDBACK | UNDO


def test_is_analyst_feedback_is_exactly_the_analyst_moves() -> None:
    assert {t for t in Trigger if t.is_analyst_feedback} == ANALYST
    assert {t for t in Trigger if t.is_decision} == FEEDBACK | REOPEN


def test_no_status_requiring_user_action_is_execution_active() -> None:
    for s in TaskStatus:
        assert not (s.requires_user_action and s.is_execution_active), s


def test_every_status_is_reachable_from_open() -> None:
    seen = {S.OPEN}
    queue = deque([S.OPEN])
    while queue:
        cur = queue.popleft()
        for (src, _), dst in TRANSITIONS.items():
            if src is cur and dst not in seen:
                seen.add(dst)
                queue.append(dst)
    assert seen == set(TaskStatus)


def test_only_reopen_and_undo_target_open() -> None:
    """A retry goes through needs_revision, never back to open; only a task that never ran is reopened there."""
    into_open = {t for (_, t), dst in TRANSITIONS.items() if dst is S.OPEN}
    assert into_open == {T.REOPEN_UNRUN, T.UNDO_TO_OPEN}


def test_illegal_transition_with_explicit_target_names_it() -> None:
    err = IllegalTransition(S.CLOSED, T.START, S.RUNNING)
    assert str(err).startswith("cannot move a task from 'closed' to 'running' (start)")
    assert err.target is S.RUNNING


def test_illegal_message_lists_allowed_triggers() -> None:
    with pytest.raises(IllegalTransition) as info:
        next_status(S.NEEDS_REVIEW, T.START)
    assert str(info.value) == (
        "cannot move a task from 'needs_review' to 'running' (start); "
        "allowed from 'needs_review': feedback_abandon, feedback_revise, feedback_satisfied, "
        "undo_to_abandoned, undo_to_closed"
    )


# ---- the flag table (core/domain/status.py STATUS_FLAGS, README "Statuses"), pinned exactly ------

#            status                 is_open is_execution_active requires_user_action terminal
FLAG_TABLE = [
    (S.OPEN, True, False, False, False),
    (S.RUNNING, True, True, False, False),
    (S.VALIDATING, True, True, False, False),
    (S.AWAITING_FEEDBACK, True, False, True, False),
    (S.NEEDS_REVIEW, True, False, True, False),
    # "yes when the analyst asked" lives on the task row; the enum answers for the automatic retry.
    (S.NEEDS_REVISION, True, False, False, False),
    # Differs from ARCHITECTURE.md and seed 002 on purpose (issue 32): a failed task accepts a
    # revision or an abandon, so it is open and waits for the analyst; README says why.
    (S.FAILED, True, False, True, False),
    (S.CLOSED, False, False, False, True),
    (S.ABANDONED, False, False, False, True),
]


def test_flag_table_covers_every_status() -> None:
    assert [row[0] for row in FLAG_TABLE] == list(TaskStatus)


@pytest.mark.parametrize(("status", "is_open", "active", "user", "terminal"), FLAG_TABLE)
def test_flag_table(status: TaskStatus, is_open: bool, active: bool, user: bool, terminal: bool) -> None:
    assert (status.is_open, status.is_execution_active, status.requires_user_action, status.is_terminal) == (
        is_open,
        active,
        user,
        terminal,
    )


def test_status_values_are_stable() -> None:
    """Values are stored in the database; renaming one is a migration, not a refactor."""
    assert [s.value for s in TaskStatus] == [
        "open",
        "running",
        "validating",
        "awaiting_feedback",
        "needs_review",
        "needs_revision",
        "failed",
        "closed",
        "abandoned",
    ]


# ---- the data flow (ARCHITECTURE.md section 3) ---------------------------------------------------


def walk(start: TaskStatus, *steps: Trigger) -> TaskStatus:
    status = start
    for step in steps:
        status = next_status(status, step)
    return status


def test_start_runs_then_answer_validates() -> None:
    assert next_status(S.OPEN, T.START) is S.RUNNING
    assert next_status(S.RUNNING, T.ANSWER_READY) is S.VALIDATING


def test_accepted_awaits_feedback() -> None:
    assert walk(S.OPEN, T.START, T.ANSWER_READY, T.VERDICT_ACCEPTED) is S.AWAITING_FEEDBACK


def test_validation_skipped_awaits_feedback() -> None:
    assert walk(S.OPEN, T.START, T.ANSWER_READY, T.VALIDATION_SKIPPED) is S.AWAITING_FEEDBACK


def test_insufficient_evidence_or_validator_error_needs_review() -> None:
    # Both surface as an unconfirmed verdict: the answer exists but nobody endorsed it.
    assert walk(S.OPEN, T.START, T.ANSWER_READY, T.VERDICT_UNCONFIRMED) is S.NEEDS_REVIEW


def test_rejected_with_attempts_left_retries() -> None:
    s = walk(S.OPEN, T.START, T.ANSWER_READY, T.VERDICT_REJECTED_RETRY)
    assert s is S.NEEDS_REVISION
    assert next_status(s, T.START) is S.RUNNING
    # a second attempt runs the same path again
    assert walk(s, T.START, T.ANSWER_READY, T.VERDICT_ACCEPTED) is S.AWAITING_FEEDBACK


def test_rejected_last_attempt_usable_needs_review_unusable_fails() -> None:
    assert next_status(S.VALIDATING, T.VERDICT_UNCONFIRMED) is S.NEEDS_REVIEW
    assert next_status(S.VALIDATING, T.VERDICT_REJECTED_UNUSABLE) is S.FAILED


def test_no_usable_answer_fails_without_validation() -> None:
    assert next_status(S.RUNNING, T.NO_USABLE_ANSWER) is S.FAILED
    assert not can(S.VALIDATING, T.NO_USABLE_ANSWER)


@pytest.mark.parametrize("src", [S.AWAITING_FEEDBACK, S.NEEDS_REVIEW])
def test_feedback(src: TaskStatus) -> None:
    assert next_status(src, T.FEEDBACK_SATISFIED) is S.CLOSED
    assert next_status(src, T.FEEDBACK_REVISE) is S.NEEDS_REVISION
    assert next_status(src, T.FEEDBACK_ABANDON) is S.ABANDONED
    assert walk(src, T.FEEDBACK_REVISE, T.START) is S.RUNNING


@pytest.mark.parametrize("src", [S.RUNNING, S.VALIDATING])
def test_interrupted_runs(src: TaskStatus) -> None:
    assert next_status(src, T.INTERRUPTED_USABLE) is S.NEEDS_REVIEW
    assert next_status(src, T.INTERRUPTED_UNUSABLE) is S.FAILED


def test_abandon_is_possible_from_every_open_status() -> None:
    for s in TaskStatus:
        assert can(s, T.FEEDBACK_ABANDON) == s.is_open, s
        if s.is_open:
            assert next_status(s, T.FEEDBACK_ABANDON) is S.ABANDONED


def test_cannot_start_twice_or_satisfy_before_an_answer() -> None:
    for s in (S.RUNNING, S.VALIDATING, S.AWAITING_FEEDBACK, S.NEEDS_REVIEW):
        assert not can(s, T.START), s
    for s in (S.OPEN, S.RUNNING, S.VALIDATING, S.NEEDS_REVISION):
        assert not can(s, T.FEEDBACK_SATISFIED), s
        assert not can(s, T.FEEDBACK_REVISE), s


def test_verdicts_only_while_validating() -> None:
    verdicts = {
        T.VERDICT_ACCEPTED,
        T.VALIDATION_SKIPPED,
        T.VERDICT_UNCONFIRMED,
        T.VERDICT_REJECTED_RETRY,
        T.VERDICT_REJECTED_UNUSABLE,
    }
    for (src, trig), _ in TRANSITIONS.items():
        if trig in verdicts:
            assert src is S.VALIDATING, (src, trig)


def test_transition_table_size_is_pinned() -> None:
    """A new edge must come with a test above; this count makes forgetting one fail loudly."""
    decisions_and_failures = 19 + len([s for s in TaskStatus if s.is_open])
    no_dead_ends = 1 + 4 + 5  # failed: revise (abandon: an open status); revision failed x2 x2; reopen x5
    undos = 15  # the inverse of every decision edge between resting statuses
    assert len(TRANSITIONS) == decisions_and_failures + no_dead_ends + undos


def test_a_dead_workers_task_is_resumed_not_delivered() -> None:
    """A worker killed mid-task: the job queue retries the job, so the task goes back to the queue."""
    assert next_status(S.RUNNING, Trigger.INTERRUPTED_RESUME) is S.NEEDS_REVISION
    assert next_status(S.VALIDATING, Trigger.INTERRUPTED_RESUME) is S.NEEDS_REVISION
    for status in TaskStatus:
        if not status.is_execution_active:
            assert not can(status, Trigger.INTERRUPTED_RESUME), status
