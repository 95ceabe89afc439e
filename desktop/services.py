"""What the desk works with: the workspace, the bus bridge, the operation runner, the task services.

Built by ``desktop.app`` (or a test) and handed to the main window, which hands it on to every
feature through ``DeskHost.services``. It lives beside ``ops`` and ``bridge`` rather than in the
window module so a feature can name its type without naming the window.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from core.tasks.queue import TaskQueue
from desktop.bridge import CoreBridge
from desktop.ops import CoreOps

if TYPE_CHECKING:
    from core.secrets import KeyringLoad
    from core.tasks.review import ReviewService
    from core.tasks.service import TaskService
    from core.workspace import Workspace

__all__ = ["DeskServices"]


class DeskServices:
    """What the window works with; built by ``desktop.app`` (or a test) and handed in.

    The task and review services are built on first use: they import the agent loop and the
    LLM gateway, which the queue's first paint does not need.
    """

    def __init__(
        self,
        workspace: Workspace,
        bridge: CoreBridge,
        ops: CoreOps,
        queue: TaskQueue,
        keys: KeyringLoad | None = None,
    ) -> None:
        self.workspace = workspace
        self.bridge = bridge
        self.ops = ops
        self.queue = queue
        self.keys = keys
        """The keyring read the launcher starts after the queue fills; runs wait for it."""
        self.launch_overrides: dict[str, Any] = {}
        """The desk's command-line settings (``--script``): Settings → Save reloads with them."""

    @functools.cached_property
    def tasks(self) -> TaskService:
        from core.tasks.service import TaskService

        if self.keys is not None:
            # Nearly always over by now (it starts once the queue has filled); if the analyst was
            # quicker, the first run waits for its keys rather than reaching a provider without them.
            self.keys.wait()
        return TaskService(self.workspace)

    @functools.cached_property
    def review(self) -> ReviewService:
        from core.tasks.review import ReviewService

        return ReviewService(self.tasks)

    @property
    def review_started(self) -> bool:
        return "review" in self.__dict__

    @property
    def tasks_started(self) -> bool:
        """Whether the task service exists yet (at exit: only then can runs need cancelling)."""
        return "tasks" in self.__dict__

    @classmethod
    def for_workspace(cls, workspace: Workspace, ops: CoreOps | None = None) -> DeskServices:
        return cls(
            workspace=workspace,
            bridge=CoreBridge(workspace.bus),
            ops=ops or CoreOps(),
            queue=TaskQueue(workspace.store),
        )
