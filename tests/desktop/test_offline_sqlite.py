"""A SQLite workspace on a share that disappears: the desk says "workspace offline —
reconnecting", holds back what needs the database, and comes back by itself with the file.

The share is a folder of its own holding the workspace file; renaming the folder away is what an
unmounted share looks like to the desk (the path no longer opens), and renaming it back is the
share returning. Every wait is on the bridge's connection signal, never on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import qasync

from core.domain import TaskStatus
from core.workspace import Workspace
from desktop.views.window.main_window import MainWindow
from desktop.views.window.offline import OFFLINE_TEXT
from tests.desktop.conftest import add_task, run, select, started, wait_signal, wait_until


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """The workspace file alone in its folder (the "share"), so the folder can go away whole."""
    share = tmp_path / "share"
    share.mkdir()
    return f"sqlite+aiosqlite:///{share / 'workspace.sqlite3'}"


def test_a_vanished_sqlite_share_shows_offline_and_recovers_when_it_is_back(
    qloop: qasync.QEventLoop, workspace: Workspace, desk: MainWindow, tmp_path: Path
) -> None:
    share, away = tmp_path / "share", tmp_path / "share-unmounted"
    connection = desk.services.bridge.sig_workspace_connection

    async def scenario() -> None:
        task = await add_task(workspace, "is the answer good?", TaskStatus.NEEDS_REVIEW)
        await started(desk)
        await select(desk, task.id)
        await wait_until(lambda: desk.live.watching, what="the watcher to start")
        assert desk.acts.satisfied.isEnabled() and not desk.offline.label.isVisible()

        gone = wait_signal(connection)
        share.rename(away)
        (event,) = await gone
        assert event.online is False
        assert desk.offline.label.isVisible() and desk.offline.label.text() == OFFLINE_TEXT
        for act in (desk.acts.satisfied, desk.acts.revise, desk.acts.abandon, desk.acts.new):
            assert not act.isEnabled() and act.toolTip().startswith(OFFLINE_TEXT)
        assert not share.exists()  # reconnecting never puts an empty workspace in its place

        reloads = desk.model.refreshes_started
        back = wait_signal(connection)
        away.rename(share)
        (event,) = await back
        assert event.online is True
        assert not desk.offline.label.isVisible()
        await wait_until(lambda: desk.acts.satisfied.isEnabled(), what="decisions allowed again")
        await wait_until(lambda: desk.model.refreshes_started > reloads, what="the queue's reload")
        await desk.services.ops.wait_idle()
        assert not desk.acts.satisfied.toolTip().startswith(OFFLINE_TEXT)

    run(qloop, scenario())
