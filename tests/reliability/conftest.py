"""Fixtures for the adversarial suites: a scratch desk driven through the CLI, and an in-memory keyring.

The keyring is swapped for the whole test (and restored), the way the desk's own keyring test swaps
in the ``fail`` backend: signing keys created here never reach the OS keyring of whoever runs them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from tests.integration.conftest import CORPUS, Desk


class MemoryKeyring(KeyringBackend):
    """A keyring that lives and dies with one test."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    try:
        yield ring
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def desk(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Desk:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in CORPUS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("EVIDENCE_DESK_LLM_NUM_RETRIES", "0")
    return Desk(tmp_path, capsys, monkeypatch)
