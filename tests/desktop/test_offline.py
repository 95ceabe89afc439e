"""The desk while the team workspace's database is away: it says so, holds back writes, and
reloads once when the watcher is listening again (core announces both as WorkspaceConnection)."""

from __future__ import annotations

import qasync

from core.domain import TaskStatus
from core.events import WorkspaceConnection
from core.workspace import Workspace
from desktop.views.window.main_window import MainWindow
from desktop.views.window.offline import OFFLINE_TEXT
from tests.desktop.conftest import add_task, run, select, started, wait_until


def test_offline_says_so_disables_writes_and_reloads_once_when_back(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow
) -> None:
    async def scenario() -> None:
        task = await add_task(workspace, "is the answer good?", TaskStatus.NEEDS_REVIEW)
        await started(desk)
        await select(desk, task.id)
        assert desk.acts.satisfied.isEnabled() and not desk.offline.label.isVisible()
        workspace.bus.publish(WorkspaceConnection(online=False))
        await wait_until(lambda: desk.offline.label.isVisible(), what="the offline notice")
        assert desk.offline.label.text() == OFFLINE_TEXT
        for act in (desk.acts.satisfied, desk.acts.revise, desk.acts.abandon, desk.acts.new):
            assert not act.isEnabled() and act.toolTip().startswith(OFFLINE_TEXT)
        reloads = desk.model.refreshes_started
        workspace.bus.publish(WorkspaceConnection(online=True))
        await wait_until(lambda: not desk.offline.label.isVisible(), what="the notice to go")
        await wait_until(lambda: desk.acts.satisfied.isEnabled(), what="decisions allowed again")
        await wait_until(lambda: desk.model.refreshes_started > reloads, what="the queue's reload")
        await desk.services.ops.wait_idle()
        assert desk.model.refreshes_started == reloads + 1  # one reload of the queue
        assert not desk.acts.satisfied.toolTip().startswith(OFFLINE_TEXT)

    run(qloop, scenario())
