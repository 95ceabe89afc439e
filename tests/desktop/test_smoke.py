from __future__ import annotations

from pytestqt.qtbot import QtBot

from desktop.app import build_window


def test_window_builds_and_shows(qtbot: QtBot) -> None:
    window = build_window()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert window.windowTitle() == "Evidence Desk"
