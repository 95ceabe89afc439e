"""Case bundle export and verify throughput on a task with 50 MB of evidence, against plain zipfile.

The baselines write (and read back) exactly the same entry bytes with plain ``zipfile`` and the same
compression in the same run, so the difference is what bundles add: reading the store, canonical
JSON, masking (secret shapes and known credentials, format 2), hashing every entry and every event,
checking the chains, and the export's own verify before it renames the file into place.

``python benchmarks/bench_bundle.py [RUNS]``: each run exports, verifies and writes and reads the
plain baseline; the spread (min / median / max) of each figure and ratio is printed.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir
from core.bundle import export_bundle, verify_bundle
from core.domain.evidence import RunEvidence, TaskEvidencePacket, ToolEvidence
from core.store import NewEvent, Store

EVIDENCE_MB = 50
ITEM_MB = 2
RUNS = 5
MB = 1024 * 1024


def _text_block(size: int) -> str:
    """Prose-like text (deflate ratio close to real documents), generated once and reused per item."""
    rng = random.Random(7)
    words = [
        "tide",
        "moon",
        "ocean",
        "trench",
        "depth",
        "pressure",
        "light",
        "speed",
        "vacuum",
        "boiling",
        "altitude",
        "summit",
        "wall",
        "dynasty",
        "venus",
        "rotation",
        "retrograde",
        "honey",
        "bee",
        "colony",
        "mechanism",
        "bronze",
        "gear",
        "rosetta",
        "stone",
        "decree",
        "hieroglyphs",
        "the",
        "of",
        "and",
        "a",
        "in",
        "measured",
        "about",
        "metres",
        "kilometres",
        "degrees",
        "years",
        "survey",
    ]
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(words)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:size]


async def build_case(store: Store) -> str:
    task = await store.create_task("Benchmark: 50 MB of evidence")
    session = await store.create_session(task_id=task.id, kind="main")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
    run = await store.create_run(
        session_id=session.id, kind="agent", model="scripted/agent", task_id=task.id, attempt_id=attempt.id
    )
    block = _text_block(ITEM_MB * MB)
    tools = []
    for i in range(EVIDENCE_MB // ITEM_MB):
        content = f"document {i}\n{block}"
        await store.append_events(
            session.id,
            [
                NewEvent(kind="tool_call_started", payload={"name": "read_document", "arguments": {"id": i}}),
                NewEvent(kind="tool_result_recorded", payload={"tool_call_id": f"c{i}"}, content=content),
            ],
            run_id=run.id,
            task_id=task.id,
        )
        tools.append(ToolEvidence(tool_name="read_document", tool_call_id=f"c{i}", content=content))
    packet = TaskEvidencePacket(
        task_id=task.id,
        attempt_index=1,
        main_run=RunEvidence(run_id=run.id, session_id=session.id, tool_results=tools),
        final_output="done",
    )
    await store.update_attempt(
        attempt.id, state="finished", final_output="done", packet=packet.model_dump(mode="json")
    )
    return task.id


def plain_zip(entries: dict[str, bytes], out: Path) -> None:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for name, blob in entries.items():
            zf.writestr(name, blob)


def plain_read(path: Path) -> int:
    with zipfile.ZipFile(path) as zf:
        return sum(len(zf.read(n)) for n in zf.namelist())


def _clock() -> tuple[float, float]:
    """Wall time and this process's CPU time (every thread: export works in threads and SQLite's)."""
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def _spread(values: list[float]) -> str:
    return f"min {min(values):5.2f}  median {statistics.median(values):5.2f}  max {max(values):5.2f}"


async def _one_run(store: Store, task_id: str, folder: Path, n: int) -> dict[str, tuple[float, float]]:
    """One export, verify, plain write and plain read of the same bytes; (wall, cpu) of each."""
    bundle = folder / f"case{n}.zip"
    start = _clock()
    summary = await export_bundle(store, [task_id], bundle)
    export = _since(start)
    start = _clock()
    report = verify_bundle(bundle)
    verify = _since(start)
    assert report.ok, report.failures
    with zipfile.ZipFile(bundle) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    start = _clock()
    plain_zip(entries, folder / f"plain{n}.zip")
    write = _since(start)
    start = _clock()
    plain_read(folder / f"plain{n}.zip")
    read = _since(start)
    (folder / f"plain{n}.zip").unlink()
    _SUMMARY.append(summary)
    return {"export": export, "verify": verify, "write": write, "read": read}


_SUMMARY: list[Any] = []


async def main() -> None:
    """Several runs in one process; ratios of each run against its own baseline, then their spread.

    The machine may be shared: CPU time (all threads) is the steadier figure, wall time is what a
    user waits; both are printed with the load average before and after."""
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    folder = scratch_dir()
    load_before = os.getloadavg()
    store = await Store.open(f"sqlite+aiosqlite:///{folder / 'ws.sqlite3'}")
    try:
        task_id = await build_case(store)
        results = [await _one_run(store, task_id, folder, n) for n in range(runs)]
    finally:
        await store.close()
    load_after = os.getloadavg()
    summary = _SUMMARY[-1]
    total = summary.uncompressed_bytes / MB
    print(
        f"evidence: {EVIDENCE_MB} MB in {summary.events} events; bundle holds {total:.1f} MB uncompressed "
        f"(events + evidence packet), {summary.file_bytes / MB:.1f} MB on disk; {runs} runs; "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after ({os.cpu_count()} cores)"
    )
    rows = [
        ("export (store read + JSON + masking + hashing + zip + own verify)", "export"),
        ("plain zipfile write, same bytes and compression level", "write"),
        ("verify (inflate + sha256 + chain check)", "verify"),
        ("plain zipfile read, same bytes", "read"),
    ]
    for label, key in rows:
        wall = [r[key][0] for r in results]
        cpu = [r[key][1] for r in results]
        print(f"{label}\n    wall s  {_spread(wall)}\n    cpu s   {_spread(cpu)}")
    for what, base in (("export", "write"), ("verify", "read")):
        for i, kind in ((0, "wall"), (1, "cpu")):
            ratios = [r[what][i] / r[base][i] for r in results]
            print(f"{what} / plain {base}, {kind:4}: {_spread(ratios)}  (x)")


if __name__ == "__main__":
    asyncio.run(main())
