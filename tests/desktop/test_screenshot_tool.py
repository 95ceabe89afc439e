"""The screenshot tool end to end, as `make screenshots` runs it, so the documented views stay reproducible.

Each shot runs as its own process on Qt's offscreen platform (the tool owns its QApplication and
event loop), over a demo workspace built by the real CLI. The PNGs must be the desk's default
size and hold a real picture, and the queue's title column must keep its room at that size (the
detail pane's minimum width once squeezed it to a few characters).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path

import pytest

from tests import zygote

ROOT = Path(__file__).resolve().parents[2]
LIVE_TEXT = "What causes ocean tides on a coast with two high tides a day?"
CHILD_LIMIT_S = 180  # a hang fails the test instead of blocking the suite


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",  # never the machine's keyring
    }


def _child(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m ARGV`` as a child process, forked from the zygote (tests/zygote.py)."""
    return zygote.run(["-m", *argv], _env(home), timeout=CHILD_LIMIT_S, cwd=ROOT)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(home, database, title -> id) of one demo workspace shared by the module's shots."""
    home = tmp_path_factory.mktemp("shot-home")
    db = home / "demo.sqlite3"
    _ok(_child(home, "core.cli", "demo", "--db", str(db)))
    listed = json.loads(_ok(_child(home, "core.cli", "list", "--db", str(db), "--json")))
    ids = {task["title"]: task["id"] for task in listed}
    assert "Rosetta Stone" in ids and "Tides" in ids, ids
    return home, db, ids


def _shot(home: Path, out: Path, *options: str) -> str:
    line = _ok(_child(home, "desktop.screenshot", str(out), *options)).strip()
    assert _png_size(out) == (1400, 860), "the desk's default window size, never a widened one"
    assert out.stat().st_size > 20_000, f"{out.name} is {out.stat().st_size} bytes: an empty window?"
    title_px = int(line.rsplit("title column ", 1)[1].removesuffix(" px"))
    assert title_px >= 240, f"{out.name}: the title column is {title_px} px at the default size"
    return line


def test_each_documented_view_is_one_command(demo: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    home, db, ids = demo
    queue = _shot(home, tmp_path / "queue.png", "--db", str(db))
    assert "tab evidence" in queue
    history = _shot(
        home, tmp_path / "history.png", "--db", str(db), "--tab", "history", "--task-id", ids["Rosetta Stone"]
    )
    assert f"selected task {ids['Rosetta Stone'][:12]}" in history and "tab history" in history
    prompt = _shot(
        home, tmp_path / "prompt.png", "--db", str(db), "--tab", "validator", "--task-id", ids["Tides"][:8]
    )
    assert "tab validator" in prompt
    found = _shot(home, tmp_path / "search.png", "--db", str(db), "--search", '"geometry of their basins"')
    assert f"selected task {ids['Tides'][:12]}" in found  # the phrase is only inside a Tides tool result

    bundle = tmp_path / "tides.zip"
    _ok(_child(home, "core.cli", "export", "--db", str(db), "-o", str(bundle), ids["Tides"]))
    other = tmp_path / "imported.sqlite3"
    read_only = _shot(home, tmp_path / "read-only.png", "--db", str(other), "--import-bundle", str(bundle))
    assert f"selected task {ids['Tides'][:12]}" in read_only  # the imported task, not some other

    # Last: the held run is cancelled when the tool closes, and stays in this workspace.
    live = _shot(home, tmp_path / "live.png", "--db", str(db), "--run-live", LIVE_TEXT)
    assert "selected task" in live
    listed = _ok(_child(home, "core.cli", "list", "--db", str(db)))
    assert LIVE_TEXT in listed  # the live task was really created in the workspace and run


def test_the_team_panes_shot_shows_batches_and_schedules_with_the_queue_narrowed(
    demo: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    home, _db, _ids = demo
    db = tmp_path / "team.sqlite3"
    rows = tmp_path / "flagged.jsonl"
    rows.write_text("\n".join(json.dumps({"key": str(n), "text": f"flagged {n}"}) for n in range(3)), "utf-8")
    _ok(_child(home, "core.cli", "batch", str(rows), "--db", str(db), "--create", "--json"))
    script = str(ROOT / "resources" / "demo" / "script.json")
    _ok(
        _child(
            home,
            "core.cli",
            "schedule",
            "add",
            "Feeds",
            "--every",
            "900",
            "--db",
            str(db),
            "--script",
            script,
        )
    )
    line = _shot(home, tmp_path / "team.png", "--db", str(db), "--team")
    assert "team panes 1 batch(es) 1 schedule(s)" in line
    batch_ids = {
        t["id"][:12] for t in json.loads(_ok(_child(home, "core.cli", "list", "--db", str(db), "--json")))
    }
    assert line.split("selected task ", 1)[1][:12] in batch_ids


def test_bad_options_say_what_is_wrong_in_one_line(
    demo: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    home, db, _ = demo
    out = tmp_path / "never.png"
    done = _child(home, "desktop.screenshot", str(out), "--db", str(db), "--task-id", "ffffffffffff")
    assert done.returncode == 2
    # The last line: Qt's offscreen platform may note what it does not support before it.
    said = done.stderr.strip().splitlines()[-1]
    assert said == "screenshot: --task-id ffffffffffff: no task in the queue starts with it"
    assert not out.exists()
    done = _child(home, "desktop.screenshot", str(out), "--run-live", "x", "--task-id", "abc")
    assert done.returncode == 2 and "--run-live shows its own task" in done.stderr
    done = _child(home, "desktop.screenshot", str(out), "--db", str(db), "--search", "zyzzyvas")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].endswith("no hits in this workspace")
