"""File -> Open case bundle: read-only, verified banner, and a clear warning when tampered."""

from __future__ import annotations

import zipfile
from pathlib import Path

import qasync
from pytestqt.qtbot import QtBot

from core.bundle import export_bundle, open_bundle
from core.bundle.signing import workspace_signing_key
from core.tasks.service import TaskService
from core.workspace import Workspace
from desktop.views.bundle_window import BundleWindow
from tests.desktop.conftest import run


def _bundle(qloop: qasync.QEventLoop, ws: Workspace, out: Path, *, signed: bool = False) -> str:
    async def make() -> str:
        service = TaskService(ws)
        task = await service.run((await service.create("What causes tides?")).id)
        key = workspace_signing_key(ws.settings.db_url) if signed else None
        await export_bundle(ws.store, [task.id], out, environ={}, signing_key=key)
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
    signer = window.opened.report.signature
    assert signer.describe() in window.banner.text()  # whose signature it is, read on the banner
    assert signer.status == "unsigned"  # this workspace had no keyring to keep a signing key in
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


def test_a_signed_bundle_names_its_signer_known_or_not(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, tmp_path: Path
) -> None:
    import keyring

    from tests.keyrings import MemoryKeyring

    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        path = tmp_path / "signed.zip"
        _bundle(qloop, workspace, path, signed=True)
        stranger = BundleWindow(open_bundle(path))
        qtbot.addWidget(stranger)
        fingerprint = stranger.opened.report.signature.fingerprint
        assert fingerprint is not None and "unknown key" in stranger.banner.text()
        own = BundleWindow(open_bundle(path, known_keys={fingerprint}))
        qtbot.addWidget(own)
        assert "known key" in own.banner.text() and "unknown" not in own.banner.text()
        assert fingerprint in own.banner.text()
    finally:
        keyring.set_keyring(previous)
