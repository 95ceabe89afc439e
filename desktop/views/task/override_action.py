"""Review → Record my verdict…: the analyst's verdict on the attempt shown, recorded in core.

Kept apart from ``override`` (the label and the dialog, which the detail pane imports): this side
needs the host, to know the attempt on screen, to run the write and to reload the task after it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDialog

from core.tasks.override import record_override
from core.tasks.review import reviewer_name
from desktop.views.task.override import OverrideDialog

if TYPE_CHECKING:
    from core.tasks.dossier import TaskDossier
    from desktop.views.host import DeskHost

__all__ = ["add_override_action", "record_from_desk"]


def record_from_desk(
    host: DeskHost, status: str, category: str, note: str, reason: str | None = None
) -> None:
    """Record the verdict on the attempt the detail pane shows, then reload the task."""
    dossier: TaskDossier | None = host.detail.dossier
    attempt = host.detail.attempt_index
    if dossier is None or attempt is None:
        return
    task_id = dossier.task.id
    workspace = host.services.workspace
    coro = record_override(
        workspace.store, task_id, status=status, category=category, note=note,
        reviewer=reviewer_name(workspace.settings.reviewer), attempt_index=attempt, reason=reason,
    )  # fmt: skip
    host.ops.run(coro, what="Recording your verdict", on_done=lambda _v: host.load_detail(task_id))


def add_override_action(host: DeskHost) -> QAction:
    """Review → Record my verdict…: opens ``OverrideDialog`` for the attempt shown."""
    act = QAction("Record my &verdict…", host.widget)
    act.setToolTip("Your own verdict on the attempt shown, kept beside the validator's")

    def open_dialog() -> None:
        attempt = host.detail.attempt_index
        if attempt is None:
            return
        from core.domain.reasons import load_reasons
        from desktop.dialogs.reason_picker import attach_reason_picker

        dialog = OverrideDialog(attempt, host.widget)
        try:
            picker = attach_reason_picker(dialog, load_reasons(host.services.workspace.settings.reasons))
        except ValueError as exc:
            host.show_error(str(exc))
            return
        if dialog.exec() == QDialog.DialogCode.Accepted:
            record_from_desk(host, *dialog.values(), reason=picker.reason)

    act.triggered.connect(open_dialog)
    host.menu("Review").addAction(act)
    return act
