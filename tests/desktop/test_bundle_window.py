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
from desktop.views.window.bundle_window import BundleWindow
from tests.desktop.conftest import run, wait_until


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


def test_a_big_text_of_a_format_2_bundle_is_paged_from_the_zip(
    qloop: qasync.QEventLoop, workspace: Workspace, qtbot: QtBot, tmp_path: Path
) -> None:
    """A big tool result travels as a content member; the bundle window pages it from the zip
    (blank before the window had a reader), and the report from the bundle previews it."""
    from core.bundle import write_report_from_bundle
    from core.domain.content import ContentPolicy
    from tests.desktop.test_evidence_paging import BIG, seed

    workspace.store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=32)
    path = tmp_path / "big.zip"

    async def make() -> str:
        task_id, _ = await seed(workspace)
        await export_bundle(workspace.store, [task_id], path, environ={})
        return task_id

    task_id = run(qloop, make())
    opened = open_bundle(path)
    assert opened.content_members  # the big text is its own member, not inline JSON

    async def scenario() -> None:
        window = BundleWindow(opened)
        qtbot.addWidget(window)
        row = next(i for i in range(window.tasks.count()) if window.tasks.item(i).data(256) == task_id)
        window.tasks.setCurrentRow(row)
        view = window.detail.evidence_view
        assert view.select_evidence("E2")
        await wait_until(lambda: view.viewer.text() == BIG)
        await window.ops.wait_idle()
        report = await write_report_from_bundle(opened, task_id, tmp_path / "big.html", environ={})
        assert BIG[:200] in report.read_text(encoding="utf-8")

    run(qloop, scenario())
