"""Case bundle export and verify throughput on a task with 50 MB of evidence, against plain zipfile.

The baselines write (and read back) exactly the same entry bytes with plain ``zipfile`` and the same
compression in the same run, so the difference is what bundles add: reading the store, canonical
JSON, redaction scanning, hashing every entry and every event, and checking the chains.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir
from core.bundle import export_bundle, verify_bundle
from core.domain.evidence import RunEvidence, TaskEvidencePacket, ToolEvidence
from core.store import NewEvent, Store

EVIDENCE_MB = 50
ITEM_MB = 2
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


async def main() -> None:
    folder = scratch_dir()
    store = await Store.open(f"sqlite+aiosqlite:///{folder / 'ws.sqlite3'}")
    try:
        task_id = await build_case(store)
        bundle = folder / "case.zip"
        t0 = time.perf_counter()
        summary = await export_bundle(store, [task_id], bundle)
        t_export = time.perf_counter() - t0
    finally:
        await store.close()

    t0 = time.perf_counter()
    report = verify_bundle(bundle)
    t_verify = time.perf_counter() - t0
    assert report.ok, report.failures

    with zipfile.ZipFile(bundle) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    t0 = time.perf_counter()
    plain_zip(entries, folder / "plain.zip")
    t_plain_write = time.perf_counter() - t0
    t0 = time.perf_counter()
    plain_read(folder / "plain.zip")
    t_plain_read = time.perf_counter() - t0

    total = summary.uncompressed_bytes / MB
    print(
        f"evidence: {EVIDENCE_MB} MB in {summary.events} events; bundle holds {total:.1f} MB uncompressed "
        f"(events + evidence packet), {summary.file_bytes / MB:.1f} MB on disk"
    )
    print(
        f"export (store read + JSON + redaction scan + hashing + zip): {t_export:6.2f} s  "
        f"{total / t_export:7.1f} MB/s"
    )
    print(
        f"plain zipfile write, same bytes:                            {t_plain_write:6.2f} s  "
        f"{total / t_plain_write:7.1f} MB/s  (export = {t_export / t_plain_write:.2f}x)"
    )
    print(
        f"verify (inflate + sha256 + chain check):                    {t_verify:6.2f} s  "
        f"{total / t_verify:7.1f} MB/s"
    )
    print(
        f"plain zipfile read, same bytes:                             {t_plain_read:6.2f} s  "
        f"{total / t_plain_read:7.1f} MB/s  (verify = {t_verify / t_plain_read:.2f}x)"
    )


if __name__ == "__main__":
    asyncio.run(main())
