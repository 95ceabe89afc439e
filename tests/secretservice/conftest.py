"""A real Secret Service (GNOME Keyring on a private D-Bus session bus) for the keyring suite.

Installed by ``tests/secretservice/provision.py`` (``make secret-service``; the machine's own copy
when it has one). Not provisioned, the suite skips and says how; with
``EVIDENCE_DESK_SECRET_SERVICE_REQUIRED=1`` (CI) it fails instead. Each test gets ``keyring``'s
SecretService backend talking to that bus, and the process's keyring is restored afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import keyring
import pytest

from tests.integration.conftest import desk  # noqa: F401  (the same scratch desk as the integration tests)
from tests.secretservice.provision import where
from tests.secretservice.session import SecretServiceSession

REQUIRED_ENV = "EVIDENCE_DESK_SECRET_SERVICE_REQUIRED"


@pytest.fixture(scope="session")
def secret_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecretServiceSession]:
    tools = where()
    if tools is None:
        message = "no Secret Service daemon here: run `make secret-service`"
        if os.environ.get(REQUIRED_ENV):
            pytest.fail(message)
        pytest.skip(message)
    session = SecretServiceSession(tools=tools, home=tmp_path_factory.mktemp("secret-service"))
    session.start()
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def real_keyring(secret_service: SecretServiceSession, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """``keyring``'s SecretService backend on the test bus (secretstorage reads the address per call)."""
    from keyring.backends.SecretService import Keyring

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", secret_service.address)
    previous = keyring.get_keyring()
    backend = Keyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)
