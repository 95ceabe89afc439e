"""The live queue as the boot window holds it, for the main window to take over.

Light on purpose: the launcher imports this before the boot window paints, long before the
queue's model and view modules load (names here are for type checkers only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop.models.queue_model import TaskQueueModel
    from desktop.ops import CoreOps
    from desktop.views.queue.view import QueueView

__all__ = ["BootQueue"]


@dataclass
class BootQueue:
    """The live queue as the boot window holds it, for the main window to take over."""

    model: TaskQueueModel  # reads through a PendingQueue until ``attach``
    view: QueueView
    ops: CoreOps
