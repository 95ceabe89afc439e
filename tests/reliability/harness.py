"""Preparing a case's folder, running the command line on it, and fingerprinting its databases."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from core.store import Store
from tests import zygote
from tests.reliability.cases import HUGE_BYTES, TASK_A, TASK_B, Case

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Seeds:
    """Workspaces built once: a healthy one (two tasks sharing a prefix, one more) and a corrupt copy."""

    healthy: Path
    corrupt: Path


def build_seeds(folder: Path) -> Seeds:
    healthy = folder / "seed.sqlite3"

    async def seed() -> None:
        store = await Store.open(str(healthy))
        await store.create_task("first task", task_id=TASK_A)
        await store.create_task("second task", task_id=TASK_B)
        await store.create_task("a third, unrelated task")
        await store.close()

    asyncio.run(seed())
    with sqlite3.connect(healthy) as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
    corrupt = folder / "corrupt.sqlite3"
    shutil.copyfile(healthy, corrupt)
    with sqlite3.connect(healthy) as conn:
        root = conn.execute("select rootpage from sqlite_master where name = 'tasks'").fetchone()[0]
        size = conn.execute("pragma page_size").fetchone()[0]
    with corrupt.open("r+b") as fh:  # the tasks table's root page: opening works, using it does not
        fh.seek((root - 1) * size)
        fh.write(b"\x13" * size)
    return Seeds(healthy, corrupt)


def prepare(case: Case, folder: Path, seeds: Seeds) -> tuple[list[str], dict[str, str]]:
    """Lay out the case's files; return its argv and environment with every ``{name}`` filled in."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(seeds.healthy, folder / "ws.sqlite3")
    shutil.copyfile(seeds.healthy, folder / "ro.sqlite3")
    shutil.copyfile(seeds.corrupt, folder / "corrupt.sqlite3")
    for name, content in case.files.items():
        path = folder / name
        if content == "fifo":
            os.mkfifo(path)
        elif content == "dir":
            path.mkdir()
        elif content == "huge":
            with path.open("wb") as fh:
                fh.truncate(HUGE_BYTES)  # sparse: over the cap without writing 16 MB
        elif isinstance(content, bytes):
            path.write_bytes(content)
    names = {
        "db": str(folder / "ws.sqlite3"),
        "corrupt": str(folder / "corrupt.sqlite3"),
        "readonly": f"sqlite:///file:{folder / 'ro.sqlite3'}?mode=ro&uri=true",  # read-only, even for root
        "out": str(folder),
    }

    def fill(text: str) -> str:
        return re.sub(r"\{([^{}]+)\}", lambda m: names.get(m.group(1), str(folder / m.group(1))), text)

    return [fill(a) for a in case.argv], {k: fill(v) for k, v in case.env.items()}


def fingerprint(folder: Path) -> dict[str, str]:
    """Every row of the healthy databases, and the corrupt one's bytes (its rows cannot be read)."""
    found: dict[str, str] = {}
    for name in ("ws.sqlite3", "ro.sqlite3"):
        with sqlite3.connect(folder / name) as conn:
            tables = [
                r[0] for r in conn.execute("select name from sqlite_master where type='table' order by 1")
            ]
            rows = [(t, *row) for t in tables for row in conn.execute(f"select * from {t} order by 1")]
        found[name] = hashlib.sha256(repr(rows).encode()).hexdigest()
    for name in ("corrupt.sqlite3", "corrupt.sqlite3-wal"):
        path = folder / name
        found[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"
    return found


def run_subprocess(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    full = {**os.environ, **env, "PYTHONPATH": str(REPO)}
    full.pop("EVIDENCE_DESK_DEBUG", None)
    done = zygote.run(["-m", "core.cli", *argv], full, timeout=120)
    return done.returncode, done.stderr
