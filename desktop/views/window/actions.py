"""The main window's actions, menus and tool bar: every key the analyst presses starts here.

Built once by ``MainWindow`` (``build_actions``) and kept out of it so the window itself holds
only layout and wiring. Each action is a window-level ``QAction`` with its keys in the tool tip,
so the ``?`` sheet (built from ``window.actions()``) lists it and menus show the keys. What each
key does comes in as ``ActionSlots``, so this module needs nothing of the window but Qt's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    sp = QStyle.StandardPixmap
    s = slots
    new = _action(window, "New task", ["Ctrl+N"], s.new_task, "Create and run a task", sp.SP_FileIcon)
    satisfied = _action(
        window, "Satisfied", ["S"], s.satisfied, "Close the task: the answer is good", sp.SP_DialogApplyButton
    )
    revise = _action(window, "Revise…", ["R"], s.revise, "Ask for another attempt", sp.SP_BrowserReload)
    abandon = _action(window, "Abandon…", ["A"], s.abandon, "Give up on the task", sp.SP_DialogDiscardButton)
    next_task = _action(window, "Next task", ["J"], lambda: queue.select_next(1), "Next task")
    prev_task = _action(window, "Previous task", ["K"], lambda: queue.select_next(-1), "Previous task")
    filter_ = _action(window, "Filter", ["/", "Ctrl+F"], queue.focus_filter, "Filter the queue")
    settings = _action(
        window, "Settings…", ["Ctrl+,"], s.open_settings, "Settings", sp.SP_FileDialogDetailedView
    )
    help_ = _action(
        window, "Shortcuts", ["?"], s.show_shortcuts, "Keyboard shortcuts", sp.SP_DialogHelpButton
    )
    leave_filter = _action(window, "Leave filter", ["Esc"], s.leave_filter, "Back to the queue")
    open_bundle = _action(
        window, "Open case bundle…", ["Ctrl+O"], s.open_case_bundle, "Open an exported case bundle read-only"
    )
    about = _action(window, "About Evidence Desk", [], s.show_about, "Version and workspace")
    quit_ = _action(window, "Quit", ["Ctrl+Q"], s.quit, "Quit")

    _menu(window, "&File", (new, open_bundle, None, settings, None, quit_))
    review_menu = _menu(window, "&Review", (satisfied, revise, abandon, next_task, prev_task, filter_))
    help_menu = _menu(window, "&Help", (help_, about))
    bar = _tool_bar(window, (new, None, satisfied, revise, abandon, None), (settings, help_))
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


def _action(
    window: QMainWindow,
    text: str,
    keys: list[str],
    slot: Callable[[], None],
    tip: str,
    std: QStyle.StandardPixmap | None = None,
) -> QAction:
    """A window-level action, so its keys work whichever pane has focus and the ``?`` sheet lists it;
    the keys go in its tool tip, where the analyst hovering a button learns them."""
    act = QAction(text, window)
    if std is not None:
        act.setIcon(window.style().standardIcon(std))
    act.setShortcuts([QKeySequence(k) for k in keys])
    act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    act.setToolTip(f"{tip} ({' / '.join(keys)})" if keys else tip)
    act.triggered.connect(lambda _checked=False: slot())
    window.addAction(act)
    return act


def _menu(window: QMainWindow, title: str, entries: Sequence[QAction | None]) -> QMenu:
    """One menu of the bar, added after those before it (File, Review, Help read left to right);
    a None entry is a separator."""
    menu = window.menuBar().addMenu(title)
    for entry in entries:
        if entry is None:
            menu.addSeparator()
        else:
            menu.addAction(entry)
    return menu


def _tool_bar(window: QMainWindow, left: Sequence[QAction | None], right: Sequence[QAction]) -> QToolBar:
    """The decisions on the left, settings and help pushed to the right edge, away from them;
    a None on the left is a separator."""
    bar = QToolBar("Actions")
    bar.setObjectName("ActionBar")
    bar.setMovable(False)
    bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    for act in left:
        if act is None:
            bar.addSeparator()
        else:
            bar.addAction(act)
    spacer = QWidget()
    spacer.setSizePolicy(
        spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy()
    )
    bar.addWidget(spacer)
    for act in right:
        bar.addAction(act)
    window.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
    return bar
