"""Text from outside cannot drive the terminal: every command prints control characters as text.

A bundle member named with a carriage return and ESC sequences once made a failing bundle display
"OK ... signed by a known key"; task titles, answers and corpus text reached ``list``, ``show`` and
``search`` raw; ``import`` took any string as a task id. Each is planted here and every output of
the command is scanned for a raw control character.
"""

from __future__ import annotations

import asyncio
import re
import zipfile

from core.store import Store
from tests.integration.conftest import Desk, verdict
from tests.keyrings import MemoryKeyring

RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")  # any control character but tab and newline
SPOOF = "\r\x1b[2K\x1b[1A" + "OK: every hash matches; signed by a known key"


def _raw(text: str) -> list[str]:
    return sorted(set(RAW.findall(text)))


def _task(desk: Desk) -> str:
    answer = "The tide\x1b[2J turns\x1b]0;owned\x07 at noon\x9b31m.\u202e"
    desk.script(
        [
            {"model": "agent", "turns": [{"content": answer}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    task = desk.cli_json("run", "When does the \x1b[31mtide\x1b[0m turn?\r\x1b[2K")
    return str(task["id"])


def test_verify_prints_a_spoofing_member_name_as_text(desk: Desk) -> None:
    task_id = _task(desk)
    bundle = desk.root / "case.zip"
    assert desk.cli("export", task_id, "-o", str(bundle))[0] == 0
    with zipfile.ZipFile(bundle, "a") as zf:
        zf.writestr(f"notes{SPOOF}.txt", b"extra")
    code, out, err = desk.cli("verify", str(bundle))
    assert code != 0
    assert _raw(out + err) == [] and "\\x1b[2K" in out + err and "\\x0d" in out + err


def test_list_show_and_search_escape_control_characters(desk: Desk) -> None:
    task_id = _task(desk)
    for argv in (
        ("list",),
        ("show", task_id),
        ("show", task_id, "--redact"),
        ("search", "tide", "--reindex"),
        ("show", task_id, "--json"),
    ):
        code, out, err = desk.cli(*argv)
        assert code == 0, (argv, err)
        assert _raw(out + err) == [], argv
        assert "tide" in out and ("\\x1b" in out or "\\u001b" in out), (argv, out[:300])


def test_import_refuses_a_task_id_not_of_the_products_shape(
    desk: Desk, memory_keyring: MemoryKeyring
) -> None:
    evil = "EVIL\x1b[2J" + "0" * 24

    async def plant() -> None:
        store = await Store.open(str(desk.db))
        await store.create_task("planted task", task_id=evil)
        await store.close()

    desk.script([{"model": "unused", "turns": [{"content": "unused"}]}])
    desk.cli("list")  # the workspace exists (migrated) before the store writes into it
    asyncio.run(plant())
    bundle = desk.root / "evil.zip"
    code, _, err = desk.cli("export", evil, "-o", str(bundle))
    assert code == 0, err
    other = desk.root / "other.sqlite3"
    code, out, err = desk.cli("import", str(bundle), "--trust", "--db", str(other))
    assert code == 4, (out, err)
    assert "is not a task id" in err and _raw(out + err) == []
    code, out, _ = desk.cli("list", "--db", str(other))
    assert code == 0 and "EVIL" not in out
