"""Presence on the desk: who else has a task on screen, and this desk telling them it has.

The selected task is recorded as "viewing" with a short lease (``core.tasks.presence``), renewed
while it stays selected; moving to another task moves the presence with it. Others' presence is
read whole (a row per open desk) whenever core announces that claims or presence changed
(``ReviewersChanged``, live from other desks) and at each renewal (a lease lapses silently), then
shown as "👁 alice" in the detail header and beside the claim mark in the queue. Closing the
desk schedules nothing: its presence lapses within the lease, as a crashed desk's would.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QBoxLayout, QLabel

from core.events import ReviewersChanged
from core.tasks.presence import PRESENCE_RENEW, Presence

if TYPE_CHECKING:
    from desktop.views.host import DeskHost

REFRESH_MS = 100  # notices in one burst (a claim and a presence together) cost one read


class PresenceKeeper(QObject):
    """Records this desk's presence on the selected task and shows everyone else's."""

    def __init__(self, host: DeskHost) -> None:
        super().__init__(host.widget)
        self._host = host
        self.presence = Presence(host.services.workspace.store)
        self.reviewer = host.reviewer
        self.viewers: dict[str, list[str]] = {}  # task id -> reviewers looking at it (others only)
        self._selected: str | None = None
        self._stopped = False
        self.label = QLabel(host.detail)
        self.label.setObjectName("PresenceLabel")
        self.label.setStyleSheet("color: #5a6b7b;")
        self.label.hide()
        title = host.detail.title_label
        page = title.parentWidget()
        header = page.layout() if page is not None else None
        if isinstance(header, QBoxLayout):  # just under the task's title
            header.insertWidget(header.indexOf(title) + 1, self.label)
        self._renew = QTimer(self, interval=int(PRESENCE_RENEW.total_seconds() * 1000))
        self._renew.timeout.connect(self._renew_presence)
        self._refresh = QTimer(self, singleShot=True, interval=REFRESH_MS)
        self._refresh.timeout.connect(self.refresh)
        host.queue.sig_task_selected.connect(self.select)
        host.services.bridge.sig_reviewers_changed.connect(self._on_reviewers_changed)
        host.model.sig_refreshed.connect(self._refresh.start)
        host.widget.installEventFilter(self)

    def select(self, task_id: str | None) -> None:
        """The analyst moved to ``task_id`` (or nothing): the presence follows."""
        if task_id == self._selected or self._stopped:
            return
        left, self._selected = self._selected, task_id
        if task_id is None:
            self._renew.stop()
            if left is not None:
                self._run(self.presence.left(left, self.reviewer), "Leaving the task")
        else:
            self._run(self.presence.viewing(task_id, self.reviewer), "Showing who looks at the task")
            self._renew.start()
        self._show_header()

    def refresh(self) -> None:
        """Read who looks at what now."""
        if self._stopped:
            return
        self._host.ops.run(self.presence.viewers(), what="Reading who looks at tasks", on_done=self._shown)

    def _shown(self, viewers: dict[str, list[str]]) -> None:
        if self._stopped:
            return
        self.viewers = {t: [n for n in names if n != self.reviewer] for t, names in viewers.items()}
        self.viewers = {t: names for t, names in self.viewers.items() if names}
        self._host.model.set_viewers(self.viewers)
        self._show_header()

    def _show_header(self) -> None:
        names = self.viewers.get(self._selected or "", [])
        self.label.setText(f"👁 {', '.join(names)} {'is' if len(names) == 1 else 'are'} looking at this task")
        self.label.setVisible(bool(names))

    def _on_reviewers_changed(self, change: ReviewersChanged) -> None:
        for task_id in change.task_ids:  # their claim marks: the queue re-reads those rows
            if self._host.model.task(task_id) is not None:
                self._host.model.update_task(task_id)
        self._refresh.start()

    def _renew_presence(self) -> None:
        if self._selected is not None and not self._stopped:
            self._run(self.presence.viewing(self._selected, self.reviewer), "Showing who looks at the task")

    def _run(self, coro: Coroutine[Any, Any, object], what: str) -> None:
        self._host.ops.run(coro, what=what, on_done=lambda _r: self._refresh.start())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """QObject.eventFilter: the window closing stops renewals; the lease then lapses."""
        if watched is self._host.widget and event.type() == QEvent.Type.Close:
            self.stop()
        return False

    def stop(self) -> None:
        self._stopped = True
        self._renew.stop()
        self._refresh.stop()


def install_presence(host: DeskHost) -> PresenceKeeper:
    return PresenceKeeper(host)


__all__ = ["PresenceKeeper", "install_presence"]
