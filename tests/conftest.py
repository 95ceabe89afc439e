"""Test-wide guards: headless Qt, no user configuration, and no network, ever."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["EVIDENCE_DESK_CONFIG_FILE"] = "/nonexistent/evidence-desk-test-config.toml"
for _key in list(os.environ):
    # The user's settings never leak into tests; EVIDENCE_DESK_TEST_* configure the tests themselves.
    if (
        _key.startswith("EVIDENCE_DESK_")
        and _key != "EVIDENCE_DESK_CONFIG_FILE"
        and not _key.startswith("EVIDENCE_DESK_TEST_")
    ):
        del os.environ[_key]


class NetworkBlocked(RuntimeError):
    pass


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        return True
    host = address[0] if isinstance(address, tuple) else address
    return host in ("127.0.0.1", "::1", "localhost") or str(host).startswith("127.")


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if not _is_local(address):
        raise NetworkBlocked(f"test tried to reach the network: {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if not _is_local(address):
        raise NetworkBlocked(f"test tried to reach the network: {address!r}")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """platformdirs must never point a test at the real user's workspace."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    yield


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'workspace.sqlite3'}"
