"""Status flags come from one table and agree with the transition table (issue 32).

Before issue 32 ``failed`` said it was not open while the transition table let it take a
revision: the flags and the moves disagreed. These tests derive what each flag must be from the
moves alone, so neither table can drift from the other again.
"""

from __future__ import annotations

import pytest

from core.domain.status import STATUS_FLAGS, TaskStatus
from core.tasks.state_machine import TRANSITIONS, Trigger

_BACK_FROM_AN_ENDING = {Trigger.REOPEN, Trigger.REOPEN_UNUSABLE, Trigger.REOPEN_UNRUN}
_RUN_ENDINGS = {Trigger.ANSWER_READY, Trigger.NO_USABLE_ANSWER, Trigger.INTERRUPTED_USABLE}


def _moves(status: TaskStatus) -> set[Trigger]:
    """Triggers that leave ``status``, undos left out (every decision has one)."""
    return {t for (src, t) in TRANSITIONS if src is status and not t.is_undo}


@pytest.mark.parametrize("status", list(TaskStatus))
def test_open_exactly_when_a_move_other_than_reopen_leaves_it(status: TaskStatus) -> None:
    forward = _moves(status) - _BACK_FROM_AN_ENDING
    assert status.is_open == bool(forward), (status, sorted(forward))
    assert status.is_terminal == (not forward), status


@pytest.mark.parametrize("status", list(TaskStatus))
def test_active_exactly_when_a_run_or_verdict_can_end_it(status: TaskStatus) -> None:
    assert status.is_execution_active == bool(
        _moves(status) & (_RUN_ENDINGS | {Trigger.INTERRUPTED_UNUSABLE})
    )


@pytest.mark.parametrize("status", list(TaskStatus))
def test_waiting_for_the_analyst_exactly_when_only_analyst_moves_leave_it(status: TaskStatus) -> None:
    """``needs_revision`` answers for the automatic retry; the task row says when an analyst asked."""
    moves = _moves(status)
    only_analyst = bool(moves) and all(t.is_analyst_feedback for t in moves)
    expected = only_analyst and status.is_open
    assert status.requires_user_action == expected, (status, sorted(moves))


def test_every_flag_is_read_from_the_one_table() -> None:
    for status, row in STATUS_FLAGS.items():
        assert status.flags is row
        assert (
            status.is_open,
            status.is_execution_active,
            status.requires_user_action,
            status.is_terminal,
        ) == row


def test_a_failed_task_is_open_and_waits_for_the_analyst() -> None:
    failed = TaskStatus.FAILED
    assert failed.is_open and failed.requires_user_action and not failed.is_terminal
    assert (failed, Trigger.FEEDBACK_REVISE) in TRANSITIONS
