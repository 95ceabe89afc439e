"""File -> Open case bundle: read-only, verified banner, and a clear warning when tampered."""

from __future__ import annotations

import zipfile
from pathlib import Path

import qasync
from pytestqt.qtbot import QtBot

from core.bundle import export_bundle, open_bundle
from core.tasks.service import TaskService
from core.workspace import Workspace
from desktop.views.bundle_window import BundleWindow
from tests.desktop.conftest import run


def _bundle(qloop: qasync.QEventLoop, ws: Workspace, out: Path) -> str:
    async def make() -> str:
        service = TaskService(ws)
        task = await service.run((await service.create("What causes tides?")).id)
        await export_bundle(ws.store, [task.id], out, environ={})
        return task.id

    return run(qloop, make())


def test_verified_bundle_opens_read_only(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, tmp_path: Path
) -> None:
    path = tmp_path / "case.zip"
    task_id = _bundle(qloop, workspace, path)
    window = BundleWindow(open_bundle(path))
    qtbot.addWidget(window)
    assert "verified, read-only" in window.banner.text()
    assert window.tasks.count() == 1
    shown = window.detail
    assert shown.attempt_index == 1
    assert task_id in window.opened.tasks[0].task.id
    assert shown.validator_view.raw_view.toPlainText().strip().startswith("{")


def test_tampered_bundle_opens_under_a_failure_banner(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, tmp_path: Path
) -> None:
    path = tmp_path / "case.zip"
    _bundle(qloop, workspace, path)
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("events.jsonl"):
                data = data.replace(b"a plain answer", b"a plain ANSWER", 1)
            dst.writestr(info, data)
    window = BundleWindow(open_bundle(tampered))
    qtbot.addWidget(window)
    assert "FAILED verification" in window.banner.text()
    assert "events.jsonl" in window.banner.toolTip()
