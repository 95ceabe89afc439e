"""What a desk feature may ask of the window it lives in: one interface, so no feature knows the window.

Search, the team panes, bulk work, claims, presence, calibration, the analyst's verdict, live
text, evidence paging and the review moves each take a ``DeskHost`` (napari hands its dock
widgets a viewer, never the Qt window; this is ours). ``MainWindow`` implements it with public
members only; a test may hand in anything of the same shape. The list below is what those
features actually use, nothing more: a feature that needs something new adds it here, where the
next reader sees it, rather than reaching into the window. ``tests/core/test_desk_boundaries.py``
keeps features from importing the window or touching its private names.

Features keep their own state in objects the window holds (``window.team``, ``window.calibration``):
they never add attributes to the window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance
    from PySide6.QtWidgets import QDialog, QMainWindow, QMenu, QWidget

    from core.domain.records import TaskRecord
    from desktop.models.queue_model import TaskQueueModel
    from desktop.ops import CoreOps
    from desktop.services import DeskServices
    from desktop.views.queue.view import QueueView
    from desktop.views.task.detail import TaskDetailView

__all__ = ["DeskHost"]


class DeskHost(Protocol):
    """The window as a feature sees it."""

    # ------------------------------------------------------------------ what the desk works with
    @property
    def services(self) -> DeskServices:
        """Workspace, bridge (bus notices as Qt signals), task and review services."""

    @property
    def ops(self) -> CoreOps:
        """The one runner of core coroutines: progress, errors, callbacks on the GUI thread."""

    @property
    def reviewer(self) -> str:
        """Whom this desk acts as (claims, presence, bulk decisions)."""

    # ------------------------------------------------------------------ its panes
    @property
    def queue(self) -> QueueView:
        """The queue: selection (``sig_task_selected``, ``select_task``), filter, the tree."""

    @property
    def model(self) -> TaskQueueModel:
        """The queue's rows: ``task``, ``update_task``, ``refresh``, ``sig_refreshed``, marks."""

    @property
    def detail(self) -> TaskDetailView:
        """The selected task's pane: dossier, attempt shown, evidence, verdict, history."""

    # ------------------------------------------------------------------ the task on screen
    @property
    def current_task(self) -> TaskRecord | None:
        """The selected task as last read (None: nothing selected)."""

    @property
    def sig_dossier_shown(self) -> SignalInstance:
        """Emitted with a task id once its dossier is on screen."""

    def load_detail(self, task_id: str) -> None:
        """Read the task's dossier again now and show it if it is still the one selected."""

    def reload_detail_soon(self) -> None:
        """Read the selected task again shortly: many notices in a burst cost one read."""

    def refused(self, task_id: str) -> Callable[[BaseException], bool]:
        """An ``on_error`` for a decision: a refusal (the task moved on) reloads it and says why."""

    # ------------------------------------------------------------------ telling the analyst
    def show_info(self, message: str) -> None:
        """A one-line message in the window's message bar."""

    def show_error(self, message: str) -> None:
        """An error about the task on screen; it goes when the analyst moves on."""

    def open_dialog(self, dialog: QDialog) -> None:
        """Open ``dialog`` window-modal with ``open()`` (no nested event loop inside qasync)."""

    # ------------------------------------------------------------------ where features go
    @property
    def widget(self) -> QMainWindow:
        """The window as Qt knows it: the parent of a feature's docks, dialogs, actions and timers,
        where window-wide shortcuts and docks are added and whose closing a feature may watch."""

    def menu(self, title: str) -> QMenu:
        """The menu bar's menu called ``title`` ("Review", "&Team": the ``&`` is ignored when
        looking); a new one is added at the end of the bar if there is none."""

    def add_above_detail(self, widget: QWidget) -> None:
        """Place ``widget`` in the right pane just above the task's detail (a selection summary)."""
