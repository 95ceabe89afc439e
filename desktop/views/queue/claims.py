"""The desk's side of review claims: the task on screen is claimed, renewed, released.

Selecting a task claims it for this desk's reviewer (``core.tasks.claims``); a timer renews the
lease while it stays selected, and moving away (or closing the desk) releases it without an
event, as a lapsed lease has none (the command line's ``release`` is recorded). When someone
else holds the selected task the desk says so, marks the row, and S/R/A first ask whether to
take it over; a confirmed take-over is recorded in the task's log by core. The desk keeps no rule
of its own: it only remembers the last answer core gave for each task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QMessageBox

from core.domain.claims import ClaimRecord
from core.domain.records import TaskRecord
from core.tasks.claims import RENEW_EVERY, ClaimHeld, Claims
from core.tasks.review import reviewer_name

if TYPE_CHECKING:
    from desktop.views.host import DeskHost


class ClaimKeeper(QObject):
    """Holds this desk's claim on the selected task and knows who holds the others it met."""

    def __init__(self, host: DeskHost) -> None:
        super().__init__(host.widget)
        self._host = host
        self._ops = host.ops
        self._model = host.model
        self.claims = Claims(host.services.workspace.store)
        self.reviewer = reviewer_name(host.services.workspace.settings.reviewer)
        self._model.reviewer = self.reviewer
        self.held: str | None = None  # the task this desk holds a claim on
        self._selected: str | None = None
        self._stopped = False
        self._others: dict[str, ClaimRecord] = {}  # tasks someone else held when we asked
        self.ask: Callable[[str], bool] = self._ask
        """How a take-over is confirmed (a question box; tests put an answer here)."""
        self._renew = QTimer(self, interval=int(RENEW_EVERY.total_seconds() * 1000))
        self._renew.timeout.connect(self._renew_claim)
        host.queue.sig_task_selected.connect(self.select)

    def select(self, task_id: str | None) -> None:
        """The analyst moved to ``task_id`` (or to nothing): release the old claim, take the new."""
        if task_id == self._selected or self._stopped:
            return
        self._selected = task_id
        self._release_held()
        if task_id is not None:
            self._take(task_id)

    def may_act(self, task: TaskRecord) -> bool:
        """Before S/R/A: True if the task is free or ours, or the analyst confirms a take-over."""
        holder = self._others.get(task.id)
        if holder is None or not holder.active(self.claims.now()):
            return True
        if not self.ask(f"Task “{task.title}” is {holder.describe()}.\n\nTake it over and decide?"):
            return False
        self._others.pop(task.id, None)
        self._ops.run(
            self.claims.take_over(task.id, self.reviewer, confirm=True),
            what="Taking over the task",
            on_done=self._claimed,
        )
        return True

    def stop(self) -> None:
        """The desk is closing: stop renewing; the lease on the task on screen then lapses.

        Nothing is scheduled here: the window and the loop are going away, and an answer arriving
        after them must find nothing to touch (``_stopped``).
        """
        self._stopped = True
        self._renew.stop()
        self._selected = self.held = None

    def _take(self, task_id: str) -> None:
        def refused(exc: BaseException) -> bool:
            if not isinstance(exc, ClaimHeld) or self._stopped:
                return self._stopped
            self._others[exc.claim.task_id] = exc.claim
            self._model.set_claim(exc.claim.task_id, exc.claim)
            if self._selected == exc.claim.task_id:
                self._host.show_info(
                    f"This task is {exc.claim.describe()}; deciding will ask to take it over."
                )
            return True

        self._ops.run(
            self.claims.claim(task_id, self.reviewer),
            what="Claiming the task",
            on_done=self._claimed,
            on_error=refused,
        )

    def _claimed(self, claim: ClaimRecord) -> None:
        if self._stopped:
            return
        self._others.pop(claim.task_id, None)
        self._model.set_claim(claim.task_id, claim)
        if self._selected != claim.task_id:  # the analyst moved on while the claim was taken
            self._ops.run(
                self.claims.release(claim.task_id, self.reviewer, record=False), what="Releasing the task"
            )
            return
        self.held = claim.task_id
        self._renew.start()

    def _renew_claim(self) -> None:
        if self.held is not None and not self._stopped:
            self._take(self.held)

    def _release_held(self) -> None:
        self._renew.stop()
        held, self.held = self.held, None
        if held is not None:
            self._model.set_claim(held, None)
            self._ops.run(self.claims.release(held, self.reviewer, record=False), what="Releasing the task")

    def _ask(self, question: str) -> bool:
        answer = QMessageBox.question(self._host.widget, "Take over the task?", question)
        return answer == QMessageBox.StandardButton.Yes


__all__ = ["ClaimKeeper"]
