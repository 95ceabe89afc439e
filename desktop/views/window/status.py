"""The status bar's permanent parts: which workspace is open, and warnings about the configuration.

The workspace shows by name (a file name, or a database URL without its password); the full
path is in the tooltip, so a screenshot or a screen share does not carry the user's home
directory. A warning true of every task (the validator and the agent from one model family)
is said here once instead of as a badge on every task.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QStatusBar

from desktop.views.task.validator import warning_line, warning_title
from desktop.widgets.plain import plain_label, plain_tooltip

if TYPE_CHECKING:  # the workspace module loads the LLM gateway: not needed to paint
    from core.workspace import Workspace


def short_name(display_name: str) -> str:
    """A file path's last part; anything else (a database URL) as it is."""
    if "://" in display_name:
        return display_name
    return PurePath(display_name).name or display_name


class WorkspaceStatus:
    """Adds the workspace label and the configuration warning to ``bar``."""

    def __init__(self, bar: QStatusBar, workspace: Workspace) -> None:
        full = workspace.display_name
        self.workspace_label = plain_label(f"Workspace: {short_name(full)}")
        self.workspace_label.setObjectName("WorkspaceName")
        self.workspace_label.setToolTip(plain_tooltip(full))
        self.warning_label = plain_label("")
        self.warning_label.setObjectName("ConfigurationWarning")
        self.warning_label.setStyleSheet("QLabel { color: #7e5109; font-weight: bold; padding: 0 6px; }")
        self.refresh(workspace)
        bar.addWidget(self.workspace_label)
        bar.addWidget(self.warning_label)

    def refresh(self, workspace: Workspace) -> None:
        """Say the configuration's warnings as the workspace's settings stand now (after a Save too)."""
        warnings = workspace.configuration_warnings()
        self.warning_label.setText(
            "⚠ " + "; ".join(warning_title(w.code) for w in warnings) if warnings else ""
        )
        self.warning_label.setToolTip(plain_tooltip("\n\n".join(warning_line(w) for w in warnings)))
        self.warning_label.setVisible(bool(warnings))


__all__ = ["WorkspaceStatus", "short_name"]
