"""The desk's first run: no model provider configured, so say so plainly and offer three ways on.

The launcher switches such a desk to the offline replay model (``core.first_run``) before the
workspace opens, so New task and Revise work at once and nothing is created that cannot run. The
banner tells the analyst, and offers the demo workspace, the replay model as it is, or Settings
with local models detected.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.config import APP_NAME, Settings
from core.first_run import needs_provider, replay_roles, with_replay_model

if TYPE_CHECKING:
    from desktop.views.window.main_window import MainWindow

BANNER_TEXT = (
    "No model provider is configured, so the desk is using the offline replay model: it answers "
    "from the demo's script, and any other question gets a placeholder that goes to review. Choose "
    "a way on:"
)


async def replay_if_unconfigured(settings: Settings) -> tuple[Settings, bool]:
    """``settings`` with the replay model standing in for every role that has no model (the
    validator and planner too when only the agent has a profile), and whether that includes the
    agent: a first run, which the banner announces."""
    if not replay_roles(settings):
        return settings, False
    first_run = needs_provider(settings)
    folder = Path(platformdirs.user_data_dir(APP_NAME))
    return await asyncio.to_thread(with_replay_model, settings, folder), first_run


class FirstRunBanner(QFrame):
    sig_load_demo = Signal()
    """The analyst chose the demo workspace."""

    sig_open_settings = Signal()
    """The analyst chose to pick a model in Settings (local ones are detected there)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("firstRunBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel(BANNER_TEXT)
        self.label.setWordWrap(True)
        self.demo_button = QPushButton("Load the demo workspace")
        self.replay_button = QPushButton("Keep the replay model")
        self.settings_button = QPushButton("Choose a model in Settings…")
        for button in (self.demo_button, self.replay_button, self.settings_button):
            button.setAutoDefault(False)
        self.demo_button.clicked.connect(self.sig_load_demo.emit)
        self.settings_button.clicked.connect(self.sig_open_settings.emit)
        self.replay_button.clicked.connect(self.hide)
        buttons = QHBoxLayout()
        buttons.addWidget(self.demo_button)
        buttons.addWidget(self.replay_button)
        buttons.addWidget(self.settings_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addLayout(buttons)


def install_first_run_banner(window: MainWindow) -> FirstRunBanner:
    """Put the banner above the message bar of ``window``'s right pane and wire its choices."""
    banner = FirstRunBanner()
    pane = window.message_bar.parentWidget()
    layout = pane.layout() if pane is not None else None
    if isinstance(layout, QVBoxLayout):
        layout.insertWidget(0, banner)
    banner.sig_load_demo.connect(window.load_demo)
    banner.sig_load_demo.connect(banner.hide)

    def open_models() -> None:
        window.open_settings()
        dialog = window.active_dialog
        show = getattr(dialog, "show_models_page", None)
        if callable(show):
            show(detect=True)

    banner.sig_open_settings.connect(open_models)
    return banner


__all__ = ["BANNER_TEXT", "FirstRunBanner", "install_first_run_banner", "replay_if_unconfigured"]
