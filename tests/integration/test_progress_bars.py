"""Long commands draw a progress bar on a terminal, and never in ``--json`` or piped output.

The terminal is a real pseudo-terminal (``pty.openpty``): the command's stderr is its slave end,
so ``isatty()`` is the kernel's answer, and what the bar drew is read back from the master end.
``TQDM_MININTERVAL=0`` makes tqdm draw every step, so the bar's last figures are on the terminal
whatever the machine's speed (no timing involved).
"""

from __future__ import annotations

import io
import os
import pty
import re
import sys
import threading
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from tests.integration.conftest import Desk, verdict


class Terminal:
    """A pty whose slave end is the command's stderr; a thread drains the master end."""

    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        self.stream = io.TextIOWrapper(io.FileIO(slave, "w"), encoding="utf-8", write_through=True)
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the slave end closed (EIO on Linux)
                return
            if not data:
                return
            self._chunks.append(data)

    def close(self) -> str:
        self.stream.close()
        self._reader.join(timeout=30)
        os.close(self.master)
        return b"".join(self._chunks).decode("utf-8", errors="replace")


def _seeded(desk: Desk) -> str:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides follow the Moon. " * 400}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    return str(desk.cli_json("run", "Tides?")["id"])


def _run(desk: Desk, stderr: io.TextIOBase, *args: str) -> int:
    defaults = {
        "--db": str(desk.db),
        "--script": str(desk.root / "script.json"),
        "--corpus": str(desk.root / "corpus"),
    }
    extra = [part for flag, value in defaults.items() if flag not in args for part in (flag, value)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stderr", stderr)
        return cli_main([*args, *extra])


def _commands(desk: Desk, task_id: str, tag: str) -> list[tuple[str, list[str]]]:
    bundle = desk.root / f"{tag}.zip"
    other = desk.root / f"{tag}-other.sqlite3"
    return [
        ("export", ["export", task_id, "-o", str(bundle)]),
        ("verify", ["verify", str(bundle)]),
        ("import", ["import", str(bundle), "--trust", "--db", str(other), "--create"]),
        ("report", ["report", task_id, "-o", str(desk.root / f"{tag}.html")]),
        ("reindex", ["search", "--reindex"]),
    ]


def _bars(text: str) -> dict[str, str]:
    """The last state each bar drew (tqdm redraws a line after a carriage return)."""
    found: dict[str, str] = {}
    for piece in re.split(r"[\r\n]", text):
        m = re.match(r"\s*(export|verify|import|report|reindex): (.*)", piece)
        if m and m.group(2).strip():
            found[m.group(1)] = m.group(2).strip()
    return found


def test_bars_on_a_terminal_and_none_when_piped_or_json(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TQDM_MININTERVAL", "0")
    task_id = _seeded(desk)
    terminal = Terminal()
    for _, argv in _commands(desk, task_id, "tty"):
        assert _run(desk, terminal.stream, *argv) == 0, argv
    bars = _bars(terminal.close())
    assert set(bars) == {"export", "verify", "import", "report", "reindex"}, bars
    assert re.match(r"[\d.]+k?B ", bars["export"]), bars["export"]  # bytes written, no total known
    for name in ("verify", "import", "report", "reindex"):
        assert bars[name].startswith("100%|"), (name, bars[name])

    piped = io.StringIO()  # stderr redirected: what a script or a log sees
    for _, argv in _commands(desk, task_id, "piped"):
        assert _run(desk, piped, *argv) == 0, argv
    assert _bars(piped.getvalue()) == {} and "\r" not in piped.getvalue(), piped.getvalue()

    terminal = Terminal()  # --json on a terminal: the output is for a program
    for _, argv in _commands(desk, task_id, "json"):
        assert _run(desk, terminal.stream, *argv, "--json") == 0, argv
    assert _bars(terminal.close()) == {}
    assert Path(desk.root / "json.zip").exists()
