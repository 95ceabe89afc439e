"""The desk's cold start, timed in fresh processes: first paint, live queue filled and painted.

Split from ``bench_desk.py``. Each start runs the desk from a private copy of its sources, with
our modules' bytecode compiled or absent (``desk_sources``), so the first start after an install
and every later start are both measured, whatever the working tree's ``__pycache__`` holds.
"""

from __future__ import annotations

import compileall
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


CHILD = r"""
import asyncio, os, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from PySide6.QtCore import QEvent, QObject, QSettings
from desktop.app import DeskLauncher, PaintProbe, boot_window, first_paint, make_application, queue_rows_shown
import qasync
print("FROM", os.path.dirname(os.path.dirname(sys.modules["desktop.app"].__file__)), flush=True)
app = make_application()
app.setQuitOnLastWindowClosed(False)
state = QSettings({ini!r}, QSettings.Format.IniFormat)
loop = qasync.QEventLoop(app)
asyncio.set_event_loop(loop)
boot = boot_window(state, {url!r})
painted = asyncio.Event()
shown = []
class RowsPainted(QObject):
    def __init__(self, widget, callback):
        super().__init__(widget)
        self.callback = callback
        widget.installEventFilter(self)
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint:
            self.callback()
        return False
def on_paint():
    print("PAINT", time.perf_counter() - t0, queue_rows_shown(boot), flush=True)
    painted.set()
def on_queue_paint(model):  # the first paint of the live queue's rows: what the analyst sees
    if model.loaded_once and not shown:
        shown.append((time.perf_counter() - t0, time.process_time()))
PaintProbe(boot, on_paint)
if boot.queue is not None:  # seeded from the stdlib's first read, before the store opens
    print("QUEUE", time.perf_counter() - t0, boot.queue.model.total_count, flush=True)
    RowsPainted(boot.queue.view.tree.viewport(), lambda: on_queue_paint(boot.queue.model))
boot.show()
async def main():
    await first_paint(painted)
    launcher = DeskLauncher({url!r}, ui_state=state)
    window = await launcher.open(boot.queue)
    if boot.queue is None:
        RowsPainted(window.queue.tree.viewport(), lambda: on_queue_paint(window.model))
    window.show(); boot.close()
    while not window.model.loaded_once:
        await asyncio.sleep(0.002)
    if boot.queue is None:
        print("QUEUE", time.perf_counter() - t0, window.model.total_count, flush=True)
    while not shown:
        await asyncio.sleep(0.002)
    print("QUEUE_PAINT", shown[0][0], shown[0][1], flush=True)
    while not (window.first_fill.filled and window.first_fill.painted):
        await asyncio.sleep(0.002)  # the store's first reload, painted in the main window
    print("READY", time.perf_counter() - t0, time.process_time(), flush=True)
    slept = 0.0
    for label, until in (("IDLE", {idle!r}), ("IDLE_LONG", {idle_long!r})):
        if until > slept:
            await asyncio.sleep(until - slept)  # idle: nothing typed, nothing scrolled
            slept = until
            rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:"))
            print(label, rss / 1024, window.model.loaded_rows(), flush=True)
    window.close()
    await launcher.close()
with loop:
    loop.run_until_complete(main())
"""


def adopt_running(path: Path) -> None:
    """A reused workspace's running tasks name the process that built it, now gone: this process
    takes them over, or the first desk's start-up recovery would move them all (and the figures)."""
    import sqlite3

    runner = f"{socket.gethostname()}:{os.getpid()}"
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE tasks SET runner = ? WHERE runner IS NOT NULL", (runner,))


def desk_sources(into: Path, *, bytecode: bool) -> Path:
    """A private copy of the desk's sources, with our modules' bytecode compiled or absent.

    Whether ``core`` and ``desktop`` have bytecode decides a fresh start's cost (hundreds of
    modules compiled from source, or read from ``__pycache__``), and the working tree's own
    ``__pycache__`` depends on who last ran what there. Each mode gets its own copy, so both are
    measured as they claim to be; the children never write bytecode, so the source-only copy stays
    uncompiled from run to run. Site-packages are untouched in both: pip compiled them at install.
    """
    root = into / ("src-bytecode" if bytecode else "src-source")
    shutil.rmtree(root, ignore_errors=True)
    for part in ("core", "desktop", "resources"):
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if bytecode and not all(compileall.compile_dir(root / part, quiet=1) for part in ("core", "desktop")):
        raise RuntimeError(f"compiling the desk's sources in {root} failed")
    return root


def cold_start(
    url: str, tmp: Path, idle_s: float = 0.0, idle_long_s: float = 0.0, *, root: Path = ROOT
) -> dict[str, float]:
    """A fresh desk process: first paint, live queue filled and painted, desk ready, idle RSS.

    RSS is read after ``idle_s`` and, when asked, again after ``idle_long_s`` in the same process:
    a queue that pages itself or a cache that grows shows as the difference. The child imports
    the desk from ``root`` (``desk_sources``) and writes no bytecode there.
    """
    code = CHILD.format(root=str(root), ini=str(tmp / "ui.ini"), url=url, idle=idle_s, idle_long=idle_long_s)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    out: dict[str, float] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        parts = line.split()
        if parts and parts[0] in ("QUEUE_PAINT", "READY"):
            key = "queue_painted" if parts[0] == "QUEUE_PAINT" else "ready"
            out[key] = float(parts[1]) + (out["queue"] - out["queue_in_process"])
            out[key + "_cpu"] = float(parts[2])
        elif parts and parts[0] in ("PAINT", "QUEUE"):
            out[parts[0].lower()] = time.perf_counter() - started
            out[parts[0].lower() + "_in_process"] = float(parts[1])
            if parts[0] == "QUEUE":
                out["listed"] = float(parts[2])
            else:
                out["paint_rows"] = float(parts[2])
        elif parts and parts[0] == "FROM" and Path(" ".join(parts[1:])) != root:
            proc.kill()
            raise RuntimeError(f"the desk child imported {' '.join(parts[1:])}, not {root}")
        elif parts and parts[0] in ("IDLE", "IDLE_LONG"):
            key = parts[0].lower()
            out[key + "_rss"] = float(parts[1])
            out[key + "_rows"] = float(parts[2])
    _, err = proc.communicate(timeout=120 + idle_long_s)
    if proc.returncode != 0 or "queue" not in out:
        raise RuntimeError(f"desk start-up child failed ({proc.returncode}): {err[-2000:]}")
    return out
