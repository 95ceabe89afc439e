"""The signing key and API keys through a real Secret Service (GNOME Keyring over D-Bus).

The memory keyring of the unit tests keeps whatever it is handed in a dict; a real Secret Service
stores items in a collection with attributes, across processes, and answers over D-Bus. These tests
go through ``keyring``'s own SecretService backend (SecretStorage, jeepney) to the daemon that
``tests/secretservice/session.py`` starts, and read the daemon back over a connection of their own.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any

import keyring

from core.bundle.signing import KEYRING_SIGNING_SERVICE
from core.secrets import KEYRING_SERVICE
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.integration.conftest import Desk, verdict
from tests.secretservice.session import SecretServiceSession

RING_KEY = ("lab-server", "ring-" + "Zz7" * 8)  # a custom keyring entry named by a profile; fake value


@contextmanager
def _daemon(session: SecretServiceSession) -> Iterator[Any]:
    """The daemon's default collection, over a D-Bus connection of the test's own."""
    import secretstorage

    with closing(secretstorage.dbus_init()) as connection:
        yield secretstorage.get_default_collection(connection)


def _items(session: SecretServiceSession, service: str) -> dict[str, str]:
    with _daemon(session) as collection:
        return {
            item.get_attributes()["username"]: item.get_secret().decode()
            for item in collection.search_items({"service": service})
        }


def _signer(bundle: Any) -> str:
    with zipfile.ZipFile(bundle) as zf:
        public = base64.b64decode(json.loads(zf.read("signature.json"))["public_key"])
    return hashlib.sha256(public).hexdigest()  # the fingerprint verify prints (core.bundle.signing)


def test_the_signing_key_is_kept_by_the_secret_service_and_signs_in_every_process(
    desk: Desk, secret_service: SecretServiceSession, real_keyring: object
) -> None:
    """Export makes the workspace's key in the daemon; a second program finds the same key there,
    so both bundles carry one signer, and verify trusts it as the workspace's own."""
    assert _items(secret_service, KEYRING_SIGNING_SERVICE) == {}
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides follow the Moon."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task_id = str(desk.cli_json("run", "Tides?")["id"])
    first = desk.root / "first.zip"
    code, _, err = desk.cli("export", task_id, "-o", str(first))
    assert code == 0, err
    stored = _items(secret_service, KEYRING_SIGNING_SERVICE)
    assert len(stored) == 1  # the key went over D-Bus into the daemon's collection
    second = desk.root / "second.zip"
    argv, env = desk.child("export", task_id, "-o", str(second))
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.SecretService.Keyring"
    done = subprocess.run(
        [sys.executable, *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert _items(secret_service, KEYRING_SIGNING_SERVICE) == stored  # found, not made again
    assert _signer(first) == _signer(second)
    code, out, err = desk.cli("verify", str(second))
    assert code == 0, err
    assert "signed by a known key" in out and _signer(second) in out
    assert next(iter(stored.values())) not in (first.read_bytes() + second.read_bytes()).decode("latin-1")


def test_an_api_key_from_a_custom_keyring_entry_is_sent_and_masked(
    desk: Desk, fake_llm: FakeLLMServer, secret_service: SecretServiceSession, real_keyring: object
) -> None:
    """``api_key_keyring = "lab-server"``: the key is read from the daemon, sent to the provider,
    and masked wherever the model quoted it."""
    keyring.set_password(KEYRING_SERVICE, *RING_KEY)
    assert _items(secret_service, KEYRING_SERVICE) == {RING_KEY[0]: RING_KEY[1]}
    for name in ("OPENAI_API_KEY", "EVIDENCE_DESK_OPENAI_API_KEY"):
        desk.monkeypatch.delenv(name, raising=False)
    desk.monkeypatch.setenv("OPENAI_API_BASE", fake_llm.openai_base)
    desk.env(
        agent_model="openai/fake-agent",
        validator_model="openai/fake-validator",
        profiles__agent__api_key_keyring=RING_KEY[0],
        profiles__validator__api_key_keyring=RING_KEY[0],
    )
    desk.script([{"model": "unused", "turns": [{"content": "unused"}]}])
    fake_llm.push(Reply.text(f"The lab key is {RING_KEY[1]}."), Reply.text(verdict("accepted", 0.9)))
    task = desk.cli_json("run", "Which key does the lab use?")
    assert task["status"] == "awaiting_feedback", task
    sent = [r.headers.get("authorization", "") for r in fake_llm.chat_requests()]
    assert sent and all(h == f"Bearer {RING_KEY[1]}" for h in sent), sent
    task_id = str(task["id"])
    bundle = desk.root / "case.zip"
    code, _, err = desk.cli("export", task_id, "-o", str(bundle))
    assert code == 0, err
    with zipfile.ZipFile(bundle) as zf:
        exported = "".join(zf.read(n).decode("utf-8") for n in zf.namelist())
    code, shown, err = desk.cli("show", task_id, "--redact")
    assert code == 0, err
    assert RING_KEY[1] not in exported and RING_KEY[1] not in shown
    assert "lab key is" in shown  # the answer is there, its key masked
