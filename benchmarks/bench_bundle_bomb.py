"""Peak memory and time of ``verify`` on a zip bomb: a ~2 MB bundle whose one entry inflates to 2 GiB.

Before entries were size-checked from their headers, verify inflated the entry whole (4.2 GB of RAM,
45 s). Each verification runs in a fresh subprocess so ``ru_maxrss`` is that verification's own
peak, not the benchmark's; a real small bundle is measured the same way for comparison.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir
from core.bundle.format import FORMAT_NAME, FORMAT_VERSION, MANIFEST_NAME, canonical, task_entry

BOMB_BYTES = 2 * 1024 * 1024 * 1024
MB = 1024 * 1024

CHILD = """
import json, resource, sys, time
from pathlib import Path
from core.bundle import verify_bundle
start = time.perf_counter()
report = verify_bundle(Path(sys.argv[1]))
elapsed = time.perf_counter() - start
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"ok": report.ok, "failures": report.failures[:3], "seconds": elapsed, "peak_kib": peak_kib}))
"""


def build(folder: Path, size: int) -> Path:
    """A bundle whose feedback entry is ``size`` zero bytes, listed honestly in the manifest."""
    task_id = "b" * 32
    name = task_entry(task_id, "feedback.json")
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "task_ids": [task_id],
        "entries": {name: {"sha256": "0" * 64, "size": size}},
        "chains": {},
        "redactions": [],
    }
    out = folder / f"bomb-{size // MB}MiB.zip"
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr(MANIFEST_NAME, canonical(manifest))
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        chunk = bytes(MB)
        with zf.open(info, "w", force_zip64=True) as fh:
            for _ in range(size // MB):
                fh.write(chunk)
    return out


def measure(path: Path) -> tuple[bool, float, float, list[str]]:
    """(ok, peak RSS in MiB, seconds, first failures) of one verification in a fresh process."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True, cwd=root
    )
    r = json.loads(done.stdout)
    return bool(r["ok"]), r["peak_kib"] / 1024, float(r["seconds"]), list(r["failures"])


def main() -> None:
    folder = scratch_dir()
    started = time.perf_counter()
    bomb = build(folder, BOMB_BYTES)
    built = time.perf_counter() - started
    print(f"built {bomb.name}: {bomb.stat().st_size / MB:.1f} MB on disk in {built:.1f} s")
    _, rss, seconds, _ = measure(build(folder, MB))
    print(f"1 MiB entry (baseline): peak RSS {rss:.0f} MiB, {seconds:.3f} s")
    ok, rss, seconds, failures = measure(bomb)
    print(f"2 GiB bomb: ok={ok}, peak RSS {rss:.0f} MiB, {seconds:.3f} s")
    for failure in failures:
        print(f"  - {failure}")


if __name__ == "__main__":
    main()
