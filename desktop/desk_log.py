"""The desk's log: warnings, uncaught exceptions and hard crashes, kept where an analyst can find them.

A desk started from a menu has no terminal, so a warning or a traceback printed to stderr was lost,
and a crash in Qt's C++ left nothing at all. Here warnings (ours and Qt's) and every uncaught
exception, of the GUI thread or any other, go to a rotating ``desk.log`` in the user log directory
(``core.config.user_log_dir``, shared with the command line), with secrets masked as an export masks
them; ``faulthandler`` writes a crashing process's stacks to ``desk-crash.log`` beside it (a file of
its own: rotation would swap the file under it). Help → Open log folder shows the folder.
"""

from __future__ import annotations

import faulthandler
import logging
import sys
import threading
from dataclasses import dataclass, field
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from PySide6.QtCore import QMessageLogContext, QtMsgType, QUrl, qInstallMessageHandler
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import QMenu

from core.config import user_log_dir
from core.logfile import rotating_log

__all__ = ["CRASH_NAME", "LOG_NAME", "DeskLog", "add_open_log_action", "install_desk_log"]

LOG_NAME = "desk.log"
CRASH_NAME = "desk-crash.log"
MAX_BYTES = 1_000_000
BACKUPS = 3
log = logging.getLogger("desktop")


@dataclass
class DeskLog:
    """What ``install_desk_log`` changed, so a test (or a second desk in one process) can undo it."""

    folder: Path
    handler: RotatingFileHandler
    crash_file: IO[str]
    previous_hooks: tuple[Any, Any] = field(default=(None, None))
    previous_level: int = logging.WARNING
    faulthandler_was_on: bool = False

    @property
    def path(self) -> Path:
        return self.folder / LOG_NAME

    def close(self) -> None:
        root = logging.getLogger()
        root.removeHandler(self.handler)
        root.setLevel(self.previous_level)
        self.handler.close()
        faulthandler.disable()
        if self.faulthandler_was_on and sys.__stderr__ is not None:
            faulthandler.enable(file=sys.__stderr__)  # as it was (pytest's, say), onto stderr
        self.crash_file.close()
        sys.excepthook, threading.excepthook = self.previous_hooks
        qInstallMessageHandler(None)


def install_desk_log(folder: Path | None = None) -> DeskLog:
    """Send warnings and uncaught exceptions to ``folder`` (default: the user log directory)."""
    where = folder if folder is not None else user_log_dir()
    where.mkdir(parents=True, exist_ok=True)
    handler = rotating_log(
        where / LOG_NAME,
        max_bytes=MAX_BYTES,
        backups=BACKUPS,
        fmt="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    root = logging.getLogger()
    previous_level = root.level
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    root.addHandler(handler)
    crash_file = open(where / CRASH_NAME, "a", encoding="utf-8")  # noqa: SIM115  # open for the process's life
    was_on = faulthandler.is_enabled()
    faulthandler.enable(file=crash_file, all_threads=True)
    hooks = (sys.excepthook, threading.excepthook)
    installed = DeskLog(where, handler, crash_file, hooks, previous_level, was_on)

    def on_uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        log.error("uncaught exception", exc_info=(kind, value, tb))
        previous, _ = installed.previous_hooks
        if previous is not None:
            previous(kind, value, tb)

    def on_thread_uncaught(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            name = args.thread.name if args.thread is not None else "?"
            log.error(
                "uncaught exception in thread %s",
                name,
                exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
            )

    sys.excepthook = on_uncaught
    threading.excepthook = on_thread_uncaught
    qInstallMessageHandler(_qt_message)
    return installed


_QT_LEVELS = {
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}


def _qt_message(kind: QtMsgType, _context: QMessageLogContext, message: str) -> None:
    """Qt's own warnings (a failed plugin, a bad style sheet) join ours; debug chatter does not."""
    level = _QT_LEVELS.get(kind)
    if level is not None:
        logging.getLogger("qt").log(level, "%s", message)


def add_open_log_action(menu: QMenu, folder: Path | None = None) -> QAction:
    """Help → Open log folder: the folder in the system's file manager (created if need be)."""
    action = QAction("Open log folder", menu)
    action.setToolTip("Show the folder holding the desk's log (warnings, errors, crash reports)")

    def open_folder() -> None:
        where = folder if folder is not None else user_log_dir()
        where.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(where)))

    action.triggered.connect(lambda _checked=False: open_folder())
    menu.addAction(action)
    return action
