"""Issue 30: the desk's log. Warnings, Qt's warnings and uncaught exceptions (any thread) land in a
rotating file in the user log directory with secrets masked; faulthandler writes there too; Help →
Open log folder opens that folder."""

from __future__ import annotations

import faulthandler
import logging
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl, qWarning
from PySide6.QtGui import QDesktopServices

from core.config import user_log_dir
from desktop.desk_log import CRASH_NAME, LOG_NAME, install_desk_log
from desktop.views.window.main_window import MainWindow
from tests.desktop.test_main_window import desk as desk  # the window fixture

FAKE_KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"


def test_user_log_dir_is_one_shared_place(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVIDENCE_DESK_LOG_DIR", str(tmp_path / "logs"))
    assert user_log_dir() == tmp_path / "logs"
    monkeypatch.delenv("EVIDENCE_DESK_LOG_DIR")
    assert user_log_dir().name in {"log", "evidence-desk", "Logs"}  # the platform's own folder


def test_warnings_and_uncaught_exceptions_go_to_the_log_with_secrets_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python's own hook underneath (pytest-qt's would fail this test for the exception it raises).
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    was_on = faulthandler.is_enabled()
    installed = install_desk_log(tmp_path)
    try:
        assert faulthandler.is_enabled() and (tmp_path / CRASH_NAME).exists()
        logging.getLogger("core.llm").warning("provider refused key %s", FAKE_KEY)
        logging.getLogger("core.llm").info("chatter that is not a warning")
        qWarning("a Qt warning")
        try:
            raise RuntimeError("boom in a slot")
        except RuntimeError:
            sys.excepthook(*sys.exc_info())  # what Python calls for an exception nobody caught
        worker = threading.Thread(target=lambda: 1 / 0, name="reader")
        worker.start()
        worker.join()
        installed.handler.flush()
        text = (tmp_path / LOG_NAME).read_text(encoding="utf-8")
    finally:
        installed.close()
    assert "provider refused key" in text and FAKE_KEY not in text
    assert "chatter" not in text
    assert "a Qt warning" in text
    assert "RuntimeError: boom in a slot" in text
    assert "uncaught exception in thread reader" in text and "ZeroDivisionError" in text
    assert faulthandler.is_enabled() == was_on  # closed: as it was before


def test_help_opens_the_log_folder(desk: MainWindow, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVIDENCE_DESK_LOG_DIR", str(tmp_path / "logs"))
    opened: list[QUrl] = []
    monkeypatch.setattr(
        QDesktopServices, "openUrl", lambda url: opened.append(url) or True
    )  # no file manager here
    assert desk.act_open_log in desk.acts.help_menu.actions()
    desk.act_open_log.trigger()
    assert [u.toLocalFile() for u in opened] == [str(tmp_path / "logs")]
    assert (tmp_path / "logs").is_dir()
