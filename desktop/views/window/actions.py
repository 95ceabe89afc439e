"""The main window's actions, menus and tool bar: every key the analyst presses starts here.

Built once by ``MainWindow`` (``build_actions``) and kept out of it so the window itself holds
only layout and wiring. Each action is a window-level ``QAction`` with its keys in the tool tip,
so the ``?`` sheet (built from ``window.actions()``) lists it and menus show the keys. What each
key does comes in as ``ActionSlots``, so this module needs nothing of the window but Qt's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu, QStyle, QToolBar, QWidget

from desktop.views.queue.view import QueueView

ICONS_DIR = Path(__file__).resolve().parents[3] / "resources" / "icons"


@dataclass(frozen=True)
class ActionSlots:
    """What the window's keys do (the window's own methods)."""

    new_task: Callable[[], None]
    satisfied: Callable[[], None]
    revise: Callable[[], None]
    abandon: Callable[[], None]
    open_settings: Callable[[], None]
    show_shortcuts: Callable[[], None]
    leave_filter: Callable[[], None]
    open_case_bundle: Callable[[], None]
    show_about: Callable[[], None]
    quit: Callable[[], None]


@dataclass(frozen=True)
class WindowActions:
    """The window's keys, its File/Review/Help menus and its tool bar, as built."""

    new: QAction
    satisfied: QAction
    revise: QAction
    abandon: QAction
    next: QAction
    prev: QAction
    filter: QAction
    settings: QAction
    help: QAction
    leave_filter: QAction
    open_bundle: QAction
    about: QAction
    quit: QAction
    review_menu: QMenu
    help_menu: QMenu
    tool_bar: QToolBar


def icon(name: str, fallback: QStyle.StandardPixmap) -> QIcon:
    """Our SVG icon if the build ships it, else the style's standard one (never a blank)."""
    path = ICONS_DIR / f"{name}.svg"
    loaded = QIcon(str(path)) if path.is_file() else QIcon()
    if loaded.isNull():
        from PySide6.QtWidgets import QApplication

        style = QApplication.style()
        return style.standardIcon(fallback) if style is not None else QIcon()
    return loaded


def build_actions(window: QMainWindow, queue: QueueView, slots: ActionSlots) -> WindowActions:
    """The window's actions, the File/Review/Help menus and the tool bar, added to ``window``."""
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

    s = slots
    new = action("New task", ["Ctrl+N"], s.new_task, "Create and run a task", sp.SP_FileIcon)
    satisfied = action(
        "Satisfied", ["S"], s.satisfied, "Close the task: the answer is good", sp.SP_DialogApplyButton
    )
    revise = action("Revise…", ["R"], s.revise, "Ask for another attempt", sp.SP_BrowserReload)
    abandon = action("Abandon…", ["A"], s.abandon, "Give up on the task", sp.SP_DialogDiscardButton)
    next_task = action("Next task", ["J"], lambda: queue.select_next(1), "Next task")
    prev_task = action("Previous task", ["K"], lambda: queue.select_next(-1), "Previous task")
    filter_ = action("Filter", ["/", "Ctrl+F"], queue.focus_filter, "Filter the queue")
    settings = action("Settings…", ["Ctrl+,"], s.open_settings, "Settings", sp.SP_FileDialogDetailedView)
    help_ = action("Shortcuts", ["?"], s.show_shortcuts, "Keyboard shortcuts", sp.SP_DialogHelpButton)
    leave_filter = action("Leave filter", ["Esc"], s.leave_filter, "Back to the queue")
    open_bundle = action(
        "Open case bundle…", ["Ctrl+O"], s.open_case_bundle, "Open an exported case bundle read-only"
    )
    about = action("About Evidence Desk", [], s.show_about, "Version and workspace")
    quit_ = action("Quit", ["Ctrl+Q"], s.quit, "Quit")

    menus = window.menuBar()
    file_menu = menus.addMenu("&File")
    file_menu.addAction(new)
    file_menu.addAction(open_bundle)
    file_menu.addSeparator()
    file_menu.addAction(settings)
    file_menu.addSeparator()
    file_menu.addAction(quit_)
    review_menu = menus.addMenu("&Review")
    for review_act in (satisfied, revise, abandon, next_task, prev_task, filter_):
        review_menu.addAction(review_act)
    help_menu = menus.addMenu("&Help")
    help_menu.addAction(help_)
    help_menu.addAction(about)

    bar = QToolBar("Actions")
    bar.setObjectName("ActionBar")
    bar.setMovable(False)
    bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    for act in (new, None, satisfied, revise, abandon, None):
        if act is None:
            bar.addSeparator()
        else:
            bar.addAction(act)
    spacer = QWidget()
    spacer.setSizePolicy(
        spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy()
    )
    bar.addWidget(spacer)
    bar.addAction(settings)
    bar.addAction(help_)
    window.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
    return WindowActions(
        new=new,
        satisfied=satisfied,
        revise=revise,
        abandon=abandon,
        next=next_task,
        prev=prev_task,
        filter=filter_,
        settings=settings,
        help=help_,
        leave_filter=leave_filter,
        open_bundle=open_bundle,
        about=about,
        quit=quit_,
        review_menu=review_menu,
        help_menu=help_menu,
        tool_bar=bar,
    )
