"""The ``desk`` step of ``bench_big_evidence.py``: the review desk opens the big task.

In a child process under ``QT_QPA_PLATFORM=offscreen``: the main window opens on the stored
workspace and fills its queue; then the task is selected and the clock runs until its first
tool result's first page is on screen. A 5 ms QTimer heartbeat records the longest gap the
loop went unserved meanwhile. Peak RSS over idle is the child's ``ru_maxrss`` at the end minus its
resident size just before the selection (the window shown, the queue filled).

Run alone: ``python benchmarks/_big_desk.py --db URL --task ID`` (prints one JSON line).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HERE = Path(__file__).resolve()


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _until(check: Callable[[], bool], what: str, limit_s: float = 600.0) -> None:
    deadline = time.perf_counter() + limit_s
    while not check():  # a benchmark's poll: the page has no "shown" signal
        if time.perf_counter() > deadline:
            raise SystemExit(f"desk: gave up waiting for {what}")
        await asyncio.sleep(0.002)


async def measure(db: str, task_id: str) -> dict[str, Any]:
    from PySide6.QtCore import QSettings, QTimer

    from core.config import load_settings
    from core.workspace import Workspace
    from desktop.services import DeskServices
    from desktop.views.window.main_window import MainWindow

    workspace = await Workspace.open(load_settings(db_url=db))
    services = DeskServices.for_workspace(workspace)
    ui = QSettings(str(Path(tempfile.mkdtemp()) / "ui.ini"), QSettings.Format.IniFormat)
    window = MainWindow(services, ui_state=ui)
    window.resize(1400, 900)
    window.show()
    refreshed = asyncio.get_running_loop().create_future()
    window.model.sig_refreshed.connect(lambda *_: refreshed.done() or refreshed.set_result(None))
    window.start()
    await refreshed
    await services.ops.wait_idle()
    idle = rss_mib()

    gaps = [0.0]
    last = [time.perf_counter()]

    def beat() -> None:
        now = time.perf_counter()
        gaps[0] = max(gaps[0], now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(beat)
    shown: list[str] = []
    window.sig_dossier_shown.connect(shown.append)
    viewer = window.detail.evidence_view.viewer
    last[0] = time.perf_counter()
    timer.start()
    started = time.perf_counter()
    assert window.queue.select_task(task_id), f"task {task_id} is not in the queue"
    await _until(lambda: task_id in shown, "the dossier")
    dossier_s = time.perf_counter() - started
    # Before paging (an older desk, for a baseline) the viewer held the whole item: wait for text.
    paged = hasattr(viewer, "is_paged")
    await _until(lambda: bool(viewer.text()) and (not paged or viewer.is_paged), "the first page")
    shown_s = time.perf_counter() - started
    timer.stop()
    beat()
    page = (
        getattr(viewer, "page_offset", 0),
        len(viewer.text()),
        getattr(viewer, "page_total", len(viewer.text())),
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    failures: list[str] = []
    services.ops.sig_failed.connect(lambda what, msg: failures.append(f"{what}: {msg}"))
    await services.ops.wait_idle()
    window.claims.stop()
    window.team.presence.stop()
    await window.live.close()
    services.bridge.close()
    window.close()
    await workspace.close()
    return {
        "select_to_dossier_s": round(dossier_s, 3),
        "select_to_first_page_s": round(shown_s, 3),
        "longest_loop_stall_ms": round(gaps[0] * 1000, 1),
        "idle_rss_mib": round(idle),
        "peak_rss_mib": round(peak),
        "peak_over_idle_mib": round(peak - idle),
        "page": {"offset": page[0], "chars": page[1], "item_chars": page[2]},
        "failures": failures,
    }


def desk_step(db: str, task_id: str, measured: Callable[..., tuple[float, float, str]]) -> dict[str, Any]:
    """Run the desk in a child process (``measured`` is the bench's runner) and return its figures."""
    url = db if "://" in db else f"sqlite+aiosqlite:///{db}"
    cmd = ["env", "QT_QPA_PLATFORM=offscreen", sys.executable, str(HERE), "--db", url, "--task", task_id]
    _s, _rss, out = measured(cmd)
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--task", required=True)
    args = parser.parse_args()
    import qasync

    from desktop.app import make_application

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["EVIDENCE_DESK_CONFIG_FILE"] = str(Path(tempfile.mkdtemp()) / "none.toml")
    app = make_application()
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        result = loop.run_until_complete(measure(args.db, args.task))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
