"""The workspace's own export verifies and imports, whatever its text compresses to.

A 1.1 MB answer of one repeated letter deflates far past 1000:1; a ratio test once called the
workspace's own export a zip bomb, so ``verify`` failed it and ``import`` refused it. A bomb is
bounded by the sizes members declare (and inflation stops there), never by their ratio.
"""

from __future__ import annotations

from tests.integration.conftest import Desk, verdict
from tests.keyrings import MemoryKeyring


def test_an_answer_of_one_repeated_letter_exports_verifies_and_imports(
    desk: Desk, memory_keyring: MemoryKeyring
) -> None:
    answer = "a" * 1_100_000
    desk.script(
        [
            {"model": "agent", "turns": [{"content": answer}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task_id = str(desk.cli_json("run", "Say a, a lot.")["id"])
    bundle = desk.root / "letters.zip"
    code, _, err = desk.cli("export", task_id, "-o", str(bundle))
    assert code == 0, err
    code, out, err = desk.cli("verify", str(bundle))
    assert code == 0, out + err
    other = desk.root / "other.sqlite3"
    code, out, err = desk.cli("import", str(bundle), "--trust", "--db", str(other))
    assert code == 0, out + err
    shown = desk.cli_json("show", task_id, "--db", str(other))
    assert shown["attempts"][0]["final_output"] == answer


def test_a_trusted_keys_file_that_is_not_utf8_is_a_clear_error(
    desk: Desk, memory_keyring: MemoryKeyring
) -> None:
    desk.script([{"model": "agent", "turns": [{"content": "Tides follow the Moon."}]}])
    desk.env(validation_mode="off")
    task_id = str(desk.cli_json("run", "Tides?")["id"])
    bundle = desk.root / "case.zip"
    assert desk.cli("export", task_id, "-o", str(bundle))[0] == 0
    config = desk.root / "config" / "config.toml"
    config.parent.mkdir()
    (config.parent / "trusted-keys.txt").write_bytes(b"# keys\n\xff\xfe" + b"ab" * 32 + b"\n")
    desk.monkeypatch.setenv("EVIDENCE_DESK_CONFIG_FILE", str(config))
    for argv in (
        ("verify", str(bundle)),
        ("import", str(bundle), "--trust", "--db", str(desk.root / "o.db")),
    ):
        code, _, err = desk.cli(*argv)
        assert code == 4, (argv, err)
        assert err.count("\n") == 1 and "trusted-keys.txt is not UTF-8 text" in err and "internal" not in err
