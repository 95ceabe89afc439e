"""A task whose model answer is huge: peak memory of the run and the biggest value it stores.

Issue #31 item 6 asks that a 50 MB answer run under 300 MB peak RSS and that no stored value be
over 4 MiB (tool results are chunked; answers, node outputs and transcripts were not). This is the
yardstick: each size runs ``evidence-desk run`` as a child process on the scripted provider (the
agent answers with the big text, the validator accepts; a script file stops at 16 MiB, so the
child puts the parsed script in the provider's script cache for a small placeholder file and then
runs the real command line), its peak RSS is the child's own
``ru_maxrss`` (``os.wait4``), and then every column of every table of the workspace is scanned for
its longest value. One JSON line per size: seconds, peak RSS in MiB, workspace bytes, the longest
value, and every column holding a value over the 4 MiB mark.

Run: ``.venv/bin/python benchmarks/bench_big_answer.py [--sizes 11M,50M]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
MARK = 4 * MIB  # the bound on one stored value
LINE = "The answer runs on, line after line, with words enough to look like prose. " * 20 + "\n"
VERDICT = {
    "goal_achievement": "judged",
    "completeness": "judged",
    "rule_compliance": "no rules",
    "status": "accepted",
    "score": 0.9,
    "issues": [],
    "recommended_revision_prompt": "",
    "category": "none",
    "citations": [],
}


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": MIB, "G": 1024 * MIB}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def _answer(size: int) -> str:
    return (LINE * (size // len(LINE) + 1))[:size]


def child(folder: Path, size: int) -> int:
    """In the child: the big script parsed into the provider's cache, then the real ``run``."""
    from core.cli.main import main as cli_main
    from core.llm import scripted

    placeholder = folder / "script.json"
    conversations = [{"model": "validator", "turns": [{"content": json.dumps(VERDICT)}]}]
    placeholder.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    big = scripted.Script.model_validate(
        {"conversations": [{"model": "agent", "turns": [{"content": _answer(size)}]}, *conversations]}
    )
    stat = placeholder.stat()
    scripted._cache[str(scripted.resolved_script_path(placeholder))] = (stat.st_mtime_ns, stat.st_size, big)
    del big
    argv = ["run", "Write it all out.", "--json", "--db", str(folder / "ws.sqlite3"), "--create"]
    return cli_main([*argv, "--script", str(placeholder), "--corpus", str(folder / "corpus")])


def _run(folder: Path, size: int) -> tuple[float, float]:
    """Wall seconds and the child's own peak RSS (MiB) of one ``run`` of the big-answer task."""
    (folder / "corpus").mkdir()
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", str(folder), "--size", str(size)]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "EVIDENCE_DESK_CONFIG_FILE": "/nonexistent/evidence-desk-bench.toml",
        "EVIDENCE_DESK_COHERENCE_MIN_CITATIONS": "0",
    }
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    err = proc.stderr.read() if proc.stderr is not None else ""
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"run failed ({code}): {err.strip()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def _longest_values(db: Path) -> list[tuple[str, int]]:
    """``table.column`` and its longest value (bytes for blobs, characters for text), longest first."""
    found: list[tuple[str, int]] = []
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
        for table in tables:
            for column in [r[1] for r in conn.execute(f'pragma table_info("{table}")')]:
                longest = conn.execute(f'select max(length("{column}")) from "{table}"').fetchone()[0]
                found.append((f"{table}.{column}", int(longest or 0)))
    return sorted(found, key=lambda item: -item[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="11M,50M")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces (their folders are printed)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.exit(child(Path(args.child), args.size))
    for text in args.sizes.split(","):
        size = parse_size(text)
        folder = scratch_dir()
        try:
            seconds, rss = _run(folder, size)
            values = _longest_values(folder / "ws.sqlite3")
            row: dict[str, Any] = {
                "answer_mb": round(size / MIB, 1),
                "run_s": round(seconds, 1),
                "peak_rss_mib": round(rss),
                "workspace_mb": round((folder / "ws.sqlite3").stat().st_size / MIB, 1),
                "longest_value": dict([values[0]]),
                "over_4_mib": {name: n for name, n in values if n > MARK},
                "load_average": round(os.getloadavg()[0], 1),
            }
            if args.keep:
                row["folder"] = str(folder)
            print(json.dumps(row), flush=True)
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
