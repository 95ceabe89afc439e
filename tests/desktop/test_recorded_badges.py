"""The desk's attempt badges come from the facts the core recorded, with no reconstruction.

Tasks are run and recovered by the real services; the badges the detail pane computes must say
exactly what the attempt's recorded outcome and state say.
"""

from __future__ import annotations

import socket

import qasync

from core.domain import TaskStatus, ValidationOutcome
from core.domain.facts import AttemptState
from core.tasks.dossier import load_dossier
from core.tasks.recovery import recover_interrupted
from core.tasks.service import TaskService
from core.workspace import Workspace
from desktop.views.task.detail import warning_badges
from tests.desktop.conftest import run


def test_badges_follow_the_recorded_attempt(qloop: qasync.QEventLoop, workspace: Workspace) -> None:
    async def scenario() -> None:
        service = TaskService(workspace)
        review = await service.run((await service.create("REVIEWME please")).id)
        accepted = await service.run((await service.create("A plain question")).id)
        crashed = await workspace.store.create_task("Killed mid-run")
        await workspace.store.update_task(
            crashed.id,
            status=TaskStatus.RUNNING,
            runner=f"{socket.gethostname()}:{2**22 + 7}",  # this host, a pid no process has
            attempt_count=1,
        )
        await workspace.store.create_attempt(crashed.id, 1, trigger="initial", prompt="p")
        await recover_interrupted(workspace)

        expected = {
            review.id: (ValidationOutcome.FORCE_ACCEPTED, AttemptState.FINISHED, ["Not endorsed"]),
            accepted.id: (ValidationOutcome.ACCEPTED, AttemptState.FINISHED, []),
            crashed.id: (None, AttemptState.INTERRUPTED, ["Interrupted run"]),
        }
        for task_id, (outcome, state, badges) in expected.items():
            dossier = await load_dossier(workspace.store, task_id)
            [attempt] = dossier.attempts
            assert (attempt.validation_outcome, attempt.state) == (outcome, state)
            assert attempt.validation_outcome == dossier.task.validation_outcome
            shown = warning_badges(dossier, attempt, dossier.validation_for(attempt.index))
            assert [b.text for b in shown if b.severity == "danger"] == badges

    run(qloop, scenario())
