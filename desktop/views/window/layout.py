"""Where the analyst left the window: its geometry, the queue/detail split, the queue's columns.

The boot window (``desktop.app``) and the main window (``restore_layout``) lay
themselves out from the same saved values, so the queue neither moves nor re-sorts when one
replaces the other. Qt only: the boot window imports this before anything of the store.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QRect, QSettings
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QSplitter, QTreeView, QWidget

DEFAULT_SIZE = (1400, 860)
DEFAULT_SPLIT = (560, 840)  # 2 : 3, scaled to the window: readable titles, the most room for the answer


def _saved(state: QSettings, key: str) -> QByteArray | None:
    value = state.value(key)
    return value if isinstance(value, QByteArray) and not value.isEmpty() else None


def available_geometry(window: QWidget) -> QRect:
    """The screen area a window may take (the screen minus panels and docks), or an empty rect."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect()


def fit_to_screen(window: QWidget, available: QRect | None = None) -> None:
    """Shrink and move ``window`` so all of it lies on ``available`` (default: its screen's).

    A 1400x860 first window put the detail pane, Settings and the status bar off a 1024x768
    laptop's screen; a geometry saved on a bigger monitor would do the same.
    """
    area = available if available is not None else available_geometry(window)
    if area.isEmpty():
        return
    frame = window.frameGeometry()
    extra_w = max(frame.width() - window.width(), 0)  # decorations, known once the window is shown
    extra_h = max(frame.height() - window.height(), 0)
    width = min(window.width(), area.width() - extra_w)
    height = min(window.height(), area.height() - extra_h)
    if (width, height) != (window.width(), window.height()):
        window.resize(max(width, window.minimumWidth()), max(height, window.minimumHeight()))
    frame = window.frameGeometry()
    x = min(max(frame.x(), area.x()), max(area.right() + 1 - frame.width(), area.x()))
    y = min(max(frame.y(), area.y()), max(area.bottom() + 1 - frame.height(), area.y()))
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)


def restore_geometry(window: QWidget, state: QSettings, available: QRect | None = None) -> None:
    """The saved geometry, else the default size; either way within the screen's available area."""
    saved = _saved(state, "window/geometry")
    if saved is None or not window.restoreGeometry(saved):
        window.resize(*DEFAULT_SIZE)
    fit_to_screen(window, available)


def restore_split(splitter: QSplitter, state: QSettings) -> None:
    saved = _saved(state, "window/splitter")
    if saved is None or not splitter.restoreState(saved):
        splitter.setSizes(list(DEFAULT_SPLIT))


def restore_splits(splitters: dict[str, QSplitter], state: QSettings) -> list[str]:
    """Each named splitter's saved position; returns the keys restored (the others keep their defaults)."""
    restored: list[str] = []
    for key, splitter in splitters.items():
        saved = _saved(state, key)
        if saved is not None and splitter.restoreState(saved):
            restored.append(key)
    return restored


def save_splits(splitters: dict[str, QSplitter], state: QSettings) -> None:
    for key, splitter in splitters.items():
        state.setValue(key, splitter.saveState())


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
    header_state = getattr(tree, "header_state", None)  # the queue's: given-way columns saved as shown
    state.setValue("queue/header", header_state() if header_state is not None else tree.header().saveState())
    state.sync()


__all__ = [
    "DEFAULT_SIZE",
    "DEFAULT_SPLIT",
    "available_geometry",
    "fit_to_screen",
    "restore_columns",
    "restore_geometry",
    "restore_layout",
    "restore_split",
    "restore_splits",
    "save_layout",
    "save_splits",
]
