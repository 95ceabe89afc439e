"""Desk start-up: QApplication on a qasync loop, window painted before anything slow."""

from __future__ import annotations

import asyncio
import sys

from PySide6.QtWidgets import QApplication, QLabel, QMainWindow


def build_window() -> QMainWindow:
    window = QMainWindow()
    window.setWindowTitle("Evidence Desk")
    label = QLabel("Evidence Desk — the review desk is being built.")
    label.setMargin(24)
    window.setCentralWidget(label)
    window.resize(1200, 800)
    return window


def run_desk(args: list[str]) -> int:
    import qasync

    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    window = build_window()
    window.show()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    with loop:
        loop.run_until_complete(closed.wait())
    return 0
