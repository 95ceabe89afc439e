"""Cold start to a painted window, for the bundle and for the venv, measured the same way.

The desk prints ``boot-painted-at=<unix time>`` when its first (boot) window paints and
``window-painted-at=<unix time>`` when the main window with the workspace paints, then quits,
when ``EVIDENCE_DESK_EXIT_AFTER_PAINT=1``. Times here are from just before the process is
spawned, so they include the interpreter start (and the bootloader's unpacking-free start in the
one-folder bundle). The first run is reported separately: it is the coldest (page cache,
``__pycache__`` or the bundle's archive not yet read).

Usage: python packaging/measure_start.py [--bundle DIR] [--python VENV_PYTHON] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKERS = {"boot": "boot-painted-at=", "window": "window-painted-at="}


def start_once(command: list[str], env: dict[str, str], db: Path, timeout: float = 120) -> dict[str, float]:
    """Seconds from spawn to each paint marker; raises RuntimeError when a marker never comes."""
    t0 = time.time()
    proc = subprocess.run(
        [*command, "--db", str(db)],
        env={
            **env,
            "EVIDENCE_DESK_EXIT_AFTER_PAINT": "1",
            "QT_QPA_PLATFORM": env.get("QT_QPA_PLATFORM", "offscreen"),
        },
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    found: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        for name, marker in MARKERS.items():
            if line.startswith(marker):
                found[name] = float(line[len(marker) :]) - t0
    if set(found) != set(MARKERS):
        raise RuntimeError(f"{command[0]} exited {proc.returncode} without painting:\n{proc.stderr[-3000:]}")
    return found


def measure(command: list[str], env: dict[str, str], db: Path, runs: int = 3) -> str:
    samples = [start_once(command, env, db) for _ in range(runs)]
    first = samples[0]
    warm = samples[1:] or samples
    med = {name: statistics.median(s[name] for s in warm) for name in MARKERS}
    return (
        f"first run: boot window {first['boot']:.2f} s, main window {first['window']:.2f} s; "
        f"median of next {len(warm)}: boot {med['boot']:.2f} s, main {med['window']:.2f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "evidence-desk")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--runs", type=int, default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="evidence-desk-start-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data")}
        db = home / "demo.sqlite3"  # the demo builds into demo.sqlite3 (its own workspace)
        subprocess.run(
            [args.python, "-m", "desktop.entry", "demo", "--db", str(db)],
            env=env,
            check=True,
            capture_output=True,
        )
        targets = {
            "bundle": [str(args.bundle / "evidence-desk")],
            "venv": [args.python, str(ROOT / "packaging" / "launcher.py")],
        }
        for name, command in targets.items():
            if Path(command[0]).exists():
                print(f"{name:6} {measure(command, env, db, args.runs)}", flush=True)
            else:
                print(f"{name:6} not found: {command[0]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
