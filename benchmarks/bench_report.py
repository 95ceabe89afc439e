"""The audit report and the search reindex of one task with big tool results: time and peak memory.

Each measured step runs in its own child process and its peak RSS is that child's own
``ru_maxrss`` (read with ``os.wait4``). The workspace is written once, by this checkout; then the
report (the CLI's ``report``, HTML to a temporary folder) and a full search reindex
(``Store.search_backfill``) run against it with this checkout's code and, with ``--base-ref``, with
the code of an older commit (extracted with ``git archive`` into a temporary folder), so a before
and after are measured on the same data in the same run. One JSON line per size.

Run: ``.venv/bin/python benchmarks/bench_report.py [--sizes 64M,256M] [--base-ref d9eb34c]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import scratch_dir

ROOT = Path(__file__).resolve().parents[1]
PIECE = 64 * 1024 * 1024
UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}

REINDEX = """
import asyncio, sys
from core.store import Store

async def main(db):
    store = await Store.open(db)
    try:
        await store.search_backfill()
    finally:
        await store.close()

asyncio.run(main(sys.argv[1]))
"""


def parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def make_text(size: int, seed: int) -> str:
    """Numbered lines of words, so no two chunks are equal (dedup must not flatter the figures)."""
    lines: list[str] = []
    total = 0
    i = 0
    while total < size:
        line = f"{seed:03d}-{i:010d} tide gauge reading near the harbour wall\n"
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines)[:size]


async def step_store(db: str, size: int) -> dict[str, Any]:
    """One task whose attempt's packet holds ``size`` bytes of tool results (64 MiB each)."""
    from core.domain import TaskEvidencePacket
    from core.domain.evidence import RunEvidence, ToolEvidence
    from core.store import Store

    store = await Store.open(db)
    try:
        task = await store.create_task(f"report of {size} bytes", title="big report")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
        tools = [
            ToolEvidence(
                tool_name="read_log", tool_call_id=f"c{n}", content=make_text(min(PIECE, size - s), n)
            )
            for n, s in enumerate(range(0, size, PIECE))
        ]
        packet = TaskEvidencePacket(
            task_id=task.id,
            attempt_index=1,
            main_run=RunEvidence(run_id="r", session_id="s", tool_results=tools, output_text="done [E1]"),
            final_output="done [E1]",
        )
        started = time.perf_counter()
        await store.update_attempt(
            attempt.id, state="finished", final_output="done [E1]", packet=packet.model_dump(mode="json")
        )
        return {"task_id": task.id, "seconds": time.perf_counter() - started}
    finally:
        await store.close()


def run_child(cmd: list[str], code: Path) -> tuple[float, float, str]:
    """Wall seconds, the child's own peak RSS in MiB (``os.wait4``) and its stdout; runs ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=code, env=env, text=True)
    out = proc.stdout.read() if proc.stdout is not None else ""
    err = proc.stderr.read() if proc.stderr is not None else ""
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:5])} failed ({proc.returncode}): {err.strip()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, out


def one_size(size: int, folder: Path, codes: dict[str, Path]) -> dict[str, Any]:
    db = str(folder / "ws.sqlite3")
    row: dict[str, Any] = {"size_mib": round(size / 1024**2)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--step", "store", "--db", db, "--size", str(size)]
    _s, rss, out = run_child(cmd, ROOT)
    stored = json.loads(out)
    row["store"] = {"seconds": round(stored["seconds"], 2), "peak_rss_mib": round(rss)}
    for label, code in codes.items():
        html = folder / f"report-{label}.html"
        seconds, rss, _ = run_child(
            [sys.executable, "-m", "core.cli", "report", stored["task_id"], "-o", str(html), "--db", db], code
        )
        row[f"report_{label}"] = {
            "seconds": round(seconds, 2),
            "peak_rss_mib": round(rss),
            "html_kib": round(html.stat().st_size / 1024),
        }
        seconds, rss, _ = run_child([sys.executable, "-c", REINDEX, db], code)
        row[f"reindex_{label}"] = {"seconds": round(seconds, 2), "peak_rss_mib": round(rss)}
        print(f"  {row['size_mib']} MiB {label}: {json.dumps(row)}", file=sys.stderr, flush=True)
    return row


def base_checkout(ref: str, into: Path) -> Path:
    """The code of ``ref`` in a temporary folder (``git archive``: the repository is not touched)."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="64M,256M", help="comma-separated sizes of tool results")
    parser.add_argument("--base-ref", help="also measure this commit's code on the same workspace")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step == "store":
        print(json.dumps(asyncio.run(step_store(args.db, args.size))))
        return
    base = scratch_dir() if args.base_ref else None
    try:
        codes = {"after": ROOT}
        if base is not None:
            codes = {"before": base_checkout(args.base_ref, base), **codes}
        for size in [parse_size(s) for s in args.sizes.split(",") if s.strip()]:
            folder = scratch_dir()
            try:
                print(json.dumps(one_size(size, folder, codes)), flush=True)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
