"""The keyring is read beside the start-up, yet its keys are in place when the window is handed over."""

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
from desktop.app import DeskLauncher
from tests.desktop.conftest import run


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


def test_open_waits_for_the_keyring_it_reads_in_the_background(
    qloop: qasync.QEventLoop, qtbot: QtBot, sqlite_url: str, ui_state: QSettings, gated: GatedKeyring
) -> None:
    launcher = DeskLauncher(sqlite_url, ui_state=ui_state)

    async def scenario() -> None:
        import asyncio

        opening = asyncio.ensure_future(launcher.open())
        await asyncio.wait_for(asyncio.to_thread(gated.asked.wait, 30), 40)
        assert not opening.done()  # the keyring has not answered: the window is not handed over
        gated.release.set()
        window = await asyncio.wait_for(opening, 60)
        qtbot.addWidget(window)
        assert os.environ.get("ANTHROPIC_API_KEY") == "sk-ant-from-keyring"
        await launcher.close()

    run(qloop, scenario())
