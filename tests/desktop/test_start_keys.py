"""The keyring is read after the queue's first fill, yet no run starts without its keys.

The read (backend discovery, maybe a desktop service) costs more than the whole queue, so the
window does not wait for it; the task service, through which every run and decision goes, does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import keyring
import pytest
import qasync
from jaraco.classes import properties
from keyring.backend import KeyringBackend
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from core.secrets import KEYRING_SERVICE
from core.workspace import Workspace
from desktop.app import DeskLauncher
from tests.desktop.conftest import run, wait_until


class GatedKeyring(KeyringBackend):
    """An in-memory keyring that answers only once the test lets it (a slow desktop service)."""

    @properties.classproperty
    def priority(cls) -> float:
        # Never viable for keyring's discovery: other tests must not get a keyring that blocks.
        raise RuntimeError("a test's own backend, set explicitly, never discovered")

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.release = threading.Event()
        self.secrets = {(KEYRING_SERVICE, "ANTHROPIC_API_KEY"): "sk-ant-from-keyring"}

    def get_password(self, service: str, username: str) -> str | None:
        self.asked.set()
        if not self.release.wait(60):
            raise TimeoutError("the test never released the keyring")
        return self.secrets.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.secrets[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.secrets.pop((service, username), None)


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> Iterator[GatedKeyring]:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    previous = keyring.get_keyring()
    backend = GatedKeyring()
    keyring.set_keyring(backend)
    yield backend
    backend.release.set()
    keyring.set_keyring(previous)
    os.environ.pop("ANTHROPIC_API_KEY", None)


def test_the_window_opens_before_the_keyring_is_read_and_reads_it_after_the_first_fill(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, ui_state: QSettings, gated: GatedKeyring
) -> None:
    launcher = DeskLauncher(sqlite_url, ui_state=ui_state)

    async def scenario() -> None:
        import asyncio

        window = await asyncio.wait_for(launcher.open(), 60)
        qtbot.addWidget(window)
        # Handed over with the keyring not even asked: it would only compete with the first fill.
        assert not gated.asked.is_set() and not launcher.keys.started
        filled_when_asked: list[bool] = []
        window.after_first_fill(lambda: filled_when_asked.append(window.model.loaded_once))
        await asyncio.wait_for(asyncio.to_thread(gated.asked.wait, 30), 40)
        await wait_until(lambda: bool(filled_when_asked), what="the deferred probe")
        assert filled_when_asked == [True]
        assert os.environ.get("ANTHROPIC_API_KEY") is None  # still gated
        gated.release.set()
        await asyncio.wait_for(asyncio.to_thread(launcher.keys.wait, 30), 40)
        assert os.environ.get("ANTHROPIC_API_KEY") == "sk-ant-from-keyring"
        assert launcher.keys.loaded == ["ANTHROPIC_API_KEY"]
        window.close()
        await launcher.close()

    run(qloop, scenario())


def test_the_task_service_waits_for_the_keys_even_before_the_first_fill(
    qloop: qasync.QEventLoop, workspace: Workspace, gated: GatedKeyring
) -> None:
    """An analyst quicker than the fill: the first run reads the keyring itself and has its keys."""
    from core.secrets import KeyringLoad
    from desktop.services import DeskServices

    services = DeskServices.for_workspace(workspace)
    services.keys = KeyringLoad()
    gated.release.set()
    assert not services.keys.started
    assert services.tasks is not None
    assert services.keys.done and os.environ.get("ANTHROPIC_API_KEY") == "sk-ant-from-keyring"


def test_a_broken_keyring_is_logged_and_costs_no_keys(caplog: pytest.LogCaptureFixture) -> None:
    from core.secrets import KeyringLoad

    def broken() -> list[str]:
        raise RuntimeError("no desktop service")

    keys = KeyringLoad(broken)
    assert keys.wait(30)
    assert keys.loaded == [] and isinstance(keys.error, RuntimeError)
    assert "reading API keys from the keyring failed" in caplog.text
