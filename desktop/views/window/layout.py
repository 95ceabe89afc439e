"""Where the analyst left the window: its geometry, the queue/detail split, the queue's columns.

The boot window (``desktop.app``) and the main window (``restore_layout``) lay
themselves out from the same saved values, so the queue neither moves nor re-sorts when one
replaces the other. Qt only: the boot window imports this before anything of the store.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QSplitter, QTreeView, QWidget

DEFAULT_SIZE = (1400, 860)
DEFAULT_SPLIT = (640, 760)  # room for readable titles at the default size


def _saved(state: QSettings, key: str) -> QByteArray | None:
    value = state.value(key)
    return value if isinstance(value, QByteArray) and not value.isEmpty() else None


def restore_geometry(window: QWidget, state: QSettings) -> None:
    saved = _saved(state, "window/geometry")
    if saved is None or not window.restoreGeometry(saved):
        window.resize(*DEFAULT_SIZE)


def restore_split(splitter: QSplitter, state: QSettings) -> None:
    saved = _saved(state, "window/splitter")
    if saved is None or not splitter.restoreState(saved):
        splitter.setSizes(list(DEFAULT_SPLIT))


def restore_columns(tree: QTreeView, state: QSettings) -> None:
    """Column widths, order, hidden columns and the sort (which the tree's model is then asked for)."""
    saved = _saved(state, "queue/header")
    if saved is not None:
        tree.header().restoreState(saved)


def restore_layout(
    window: QWidget, state: QSettings, splitter: QSplitter, tree: QTreeView, *, header: bool = True
) -> None:
    """Geometry, splitter and queue columns as the analyst left them, else readable defaults.

    ``header=False``: the queue's view comes from the boot window, which restored its columns and
    sort already; restoring them again would undo a sort the analyst chose there meanwhile.
    """
    restore_geometry(window, state)
    restore_split(splitter, state)
    if header:
        restore_columns(tree, state)


def save_layout(window: QWidget, state: QSettings, splitter: QSplitter, tree: QTreeView) -> None:
    state.setValue("window/geometry", window.saveGeometry())
    state.setValue("window/splitter", splitter.saveState())
    state.setValue("queue/header", tree.header().saveState())
    state.sync()


__all__ = [
    "DEFAULT_SIZE",
    "DEFAULT_SPLIT",
    "restore_columns",
    "restore_geometry",
    "restore_layout",
    "restore_split",
    "save_layout",
]
