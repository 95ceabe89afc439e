"""Small pieces of the desk's chrome: the message bar, the run progress strip, the empty state."""

from __future__ import annotations

from datetime import UTC, datetime

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.events import RunProgress
from desktop.presentation import in_words


class MessageBar(QFrame):
    """Inline messages instead of modal boxes: they never block the loop or a keyboard flow."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("MessageBar")
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # messages quote titles and errors
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QPushButton("✕")
        close.setFlat(True)
        close.setFixedWidth(28)
        close.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 6, 6)
        row.addWidget(self.label, 1)
        row.addWidget(close)
        self._hide_timer = QTimer(self, singleShot=True)
        self._hide_timer.timeout.connect(self.hide)
        self._task_id: str | None = None
        self.hide()

    def set_current_task(self, task_id: str | None) -> None:
        """The analyst moved to ``task_id``: a message about another task is no longer theirs."""
        if self._task_id is not None and task_id != self._task_id:
            self._task_id = None
            self._hide_timer.stop()
            self.label.clear()
            self.hide()

    def text(self) -> str:
        return self.label.text() if self.isVisible() or self.label.text() else ""

    def show_message(self, message: str, *, error: bool = False, task_id: str | None = None) -> None:
        """``task_id``: the message is about that task and goes when another one is selected."""
        self._task_id = task_id
        self.setProperty("level", "error" if error else "info")
        self.style().unpolish(self)
        self.style().polish(self)
        self.label.setText(in_words(message))  # core's refusals name statuses as stored
        self.show()
        self._hide_timer.stop()
        if not error:
            self._hide_timer.start(6000)


class RunProgressStrip(QFrame):
    """Live progress of the selected task's run: attempt, iteration, tool, elapsed time."""

    sig_cancel_requested = Signal()
    """The analyst pressed Cancel on the running task."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("RunProgress")
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # tool names come from models
        self.cancel_button = QPushButton("Cancel run")
        self.cancel_button.clicked.connect(self.sig_cancel_requested)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 8, 2)
        row.addWidget(self.label, 1)
        row.addWidget(self.cancel_button)
        self._progress: RunProgress | None = None
        self._status = ""
        self._tick = QTimer(self, interval=1000)
        self._tick.timeout.connect(self._render)
        self.hide()

    def show_progress(self, status: str, progress: RunProgress | None) -> None:
        self._status = status
        self._progress = progress
        self._render()
        self.show()
        if not self._tick.isActive():
            self._tick.start()

    def clear(self) -> None:
        self._tick.stop()
        self._progress = None
        self.hide()

    def _render(self) -> None:
        p = self._progress
        bits = [in_words(self._status)]
        if p is not None:
            bits.append(f"attempt {p.attempt}")
            if p.phase:
                bits.append(p.phase)
            if p.iteration:
                bits.append(f"iteration {p.iteration}")
            if p.node:
                bits.append(f"node {p.node}")
            if p.tool:
                bits.append(f"tool {p.tool}")
            if p.started_at is not None:
                bits.append(_elapsed(p.started_at))
        self.label.setText(" · ".join(bits))


def _elapsed(start: datetime) -> str:
    seconds = max(0, int((datetime.now(UTC) - start).total_seconds()))
    return f"{seconds // 60:02d}:{seconds % 60:02d} elapsed"


class EmptyState(QFrame):
    """What an empty workspace shows: a clear way to start, and the demo."""

    sig_new_task = Signal()
    """The analyst wants to write a first task."""

    sig_load_demo = Signal()
    """The analyst wants the demo workspace's sample tasks."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("EmptyState")
        title = QLabel("<h2>This workspace has no tasks yet</h2>")
        body = QLabel(
            "Write a task for the agent, or load the demo workspace to see finished, reviewed and "
            "flagged tasks with their evidence."
        )
        body.setWordWrap(True)
        self.new_button = QPushButton("New task…  (Ctrl+N)")
        self.demo_button = QPushButton("Load the demo workspace")
        self.new_button.clicked.connect(self.sig_new_task)
        self.demo_button.clicked.connect(self.sig_load_demo)
        buttons = QHBoxLayout()
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.demo_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 24, 24, 24)
        layout.addWidget(title)
        layout.addWidget(body)
        layout.addLayout(buttons)
        layout.addStretch(1)
