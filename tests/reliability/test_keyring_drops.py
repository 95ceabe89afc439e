"""A keyring that accepts writes and keeps nothing is detected and said once, not papered over with
a new signing key per export (a signature by a key nobody can find again vouches for nothing)."""

from __future__ import annotations

import logging
import zipfile

import keyring
import pytest

from tests.integration.conftest import Desk, verdict
from tests.keyrings import DroppingKeyring


def test_a_keyring_that_drops_writes_leaves_exports_unsigned_and_says_so_once(
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    previous = keyring.get_keyring()
    keyring.set_keyring(DroppingKeyring())
    try:
        desk.script(
            [
                {"model": "agent", "turns": [{"content": "Tides follow the Moon."}]},
                {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
            ]
        )
        task_id = str(desk.cli_json("run", "Tides?")["id"])
        names = []
        with caplog.at_level(logging.WARNING):
            for n in (1, 2):
                bundle = desk.root / f"case{n}.zip"
                code, _, err = desk.cli("export", task_id, "-o", str(bundle))
                assert code == 0, err
                with zipfile.ZipFile(bundle) as zf:
                    names.append(set(zf.namelist()))
    finally:
        keyring.set_keyring(previous)
    assert all("signature.json" not in n for n in names), names
    said = [r for r in caplog.records if "did not keep the workspace's signing key" in r.getMessage()]
    assert len(said) == 1
