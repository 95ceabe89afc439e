"""The main window's actions, menus, tool bar and saved layout: every key the analyst presses starts here.

Built once by ``MainWindow`` (``build_actions``) and kept out of it so the window itself holds
only layout and wiring. Each action is a window-level ``QAction`` with its keys in the tool tip,
so the ``?`` sheet (built from ``window.actions()``) lists it and menus show the keys.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import QStyle, QToolBar, QWidget

from desktop.views.insight.calibration import add_calibration_action
from desktop.views.task.history import ReviewMoves
from desktop.views.task.override import add_override_action
from desktop.views.window.layout import restore_columns, restore_geometry, restore_split

if TYPE_CHECKING:
    from desktop.views.window.main_window import MainWindow

ICONS_DIR = Path(__file__).resolve().parents[3] / "resources" / "icons"


def icon(name: str, fallback: QStyle.StandardPixmap) -> QIcon:
    """Our SVG icon if the build ships it, else the style's standard one (never a blank)."""
    path = ICONS_DIR / f"{name}.svg"
    loaded = QIcon(str(path)) if path.is_file() else QIcon()
    if loaded.isNull():
        from PySide6.QtWidgets import QApplication

        style = QApplication.style()
        return style.standardIcon(fallback) if style is not None else QIcon()
    return loaded


def build_actions(window: MainWindow) -> None:
    """Creates ``window.act_*``, the File/Review/Help menus and the tool bar."""
    style = window.style()
    sp = QStyle.StandardPixmap

    def action(text: str, keys: list[str], slot: Callable[[], None], tip: str, std: Any = None) -> QAction:
        act = QAction(text, window)
        if std is not None:
            act.setIcon(style.standardIcon(std))
        act.setShortcuts([QKeySequence(k) for k in keys])
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        act.setToolTip(f"{tip} ({' / '.join(keys)})" if keys else tip)
        act.triggered.connect(lambda _checked=False: slot())
        window.addAction(act)
        return act

    w = window
    w.act_new = action("New task", ["Ctrl+N"], w.new_task, "Create and run a task", sp.SP_FileIcon)
    w.act_satisfied = action(
        "Satisfied", ["S"], w.satisfied, "Close the task: the answer is good", sp.SP_DialogApplyButton
    )
    w.act_revise = action("Revise…", ["R"], w.revise, "Ask for another attempt", sp.SP_BrowserReload)
    w.act_abandon = action("Abandon…", ["A"], w.abandon, "Give up on the task", sp.SP_DialogDiscardButton)
    w.act_next = action("Next task", ["J"], lambda: w.queue.select_next(1), "Next task")
    w.act_prev = action("Previous task", ["K"], lambda: w.queue.select_next(-1), "Previous task")
    w.act_filter = action("Filter", ["/", "Ctrl+F"], w.queue.focus_filter, "Filter the queue")
    w.act_settings = action(
        "Settings…", ["Ctrl+,"], w.open_settings, "Settings", sp.SP_FileDialogDetailedView
    )
    w.act_help = action("Shortcuts", ["?"], w.show_shortcuts, "Keyboard shortcuts", sp.SP_DialogHelpButton)
    w.act_leave_filter = action("Leave filter", ["Esc"], w.leave_filter, "Back to the queue")
    w.act_open_bundle = action(
        "Open case bundle…", ["Ctrl+O"], w.open_case_bundle, "Open an exported case bundle read-only"
    )
    w.act_about = action("About Evidence Desk", [], w.show_about, "Version and workspace")
    w.act_quit = action("Quit", ["Ctrl+Q"], w.quit, "Quit")

    menus = w.menuBar()
    file_menu = menus.addMenu("&File")
    file_menu.addAction(w.act_new)
    file_menu.addAction(w.act_open_bundle)
    file_menu.addSeparator()
    file_menu.addAction(w.act_settings)
    file_menu.addSeparator()
    file_menu.addAction(w.act_quit)
    w.review_menu = menus.addMenu("&Review")
    for review_act in (w.act_satisfied, w.act_revise, w.act_abandon, w.act_next, w.act_prev, w.act_filter):
        w.review_menu.addAction(review_act)
    w.review_moves = ReviewMoves(w, w.review_menu)  # undo, reopen, decisions with notes
    add_calibration_action(w, w.review_menu)
    add_override_action(w, w.review_menu)
    w.help_menu = menus.addMenu("&Help")
    w.help_menu.addAction(w.act_help)
    w.help_menu.addAction(w.act_about)

    bar = QToolBar("Actions")
    bar.setObjectName("ActionBar")
    bar.setMovable(False)
    bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    for act in (w.act_new, None, w.act_satisfied, w.act_revise, w.act_abandon, None):
        if act is None:
            bar.addSeparator()
        else:
            bar.addAction(act)
    spacer = QWidget()
    spacer.setSizePolicy(
        spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy()
    )
    bar.addWidget(spacer)
    bar.addAction(w.act_settings)
    bar.addAction(w.act_help)
    w.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
    w.tool_bar = bar


def restore_layout(window: MainWindow, *, header: bool = True) -> None:
    """Geometry, splitter and queue columns as the analyst left them, else readable defaults.

    ``header=False``: the queue's view comes from the boot window, which restored its columns and
    sort already; restoring them again would undo a sort the analyst chose there meanwhile.
    """
    restore_geometry(window, window.ui_state)
    restore_split(window.splitter, window.ui_state)
    if header:
        restore_columns(window.queue.tree, window.ui_state)


def save_layout(window: MainWindow) -> None:
    state = window.ui_state
    state.setValue("window/geometry", window.saveGeometry())
    state.setValue("window/splitter", window.splitter.saveState())
    state.setValue("queue/header", window.queue.tree.header().saveState())
    state.sync()
