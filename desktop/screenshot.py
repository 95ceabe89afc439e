"""Save a PNG of the desk: ``python -m desktop.screenshot OUT.png [--db URL] [--size 1400x860]``.

Opens the desk on the workspace, waits until the queue is filled and a task is selected (the
first one needing review, else the first task listed) and its detail is shown, then grabs the
window. Works headless with ``QT_QPA_PLATFORM=offscreen``. The window state is kept in a
throw-away settings file so a screenshot never changes the analyst's saved layout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings


async def _capture(out: Path, db_url: str | None, size: tuple[int, int]) -> int:
    from desktop.app import DeskLauncher
    from desktop.presentation import GROUPS

    state = QSettings(str(Path(tempfile.mkdtemp()) / "ui.ini"), QSettings.Format.IniFormat)
    launcher = DeskLauncher(db_url, ui_state=state)
    try:
        window = await launcher.open()
        window.resize(*size)  # the splitter keeps the window's own default layout
        window.show()
        for _ in range(500):
            if window.model.loaded_once:
                break
            await asyncio.sleep(0.01)
        chosen = None
        for group in GROUPS:
            ids = window.model.group_task_ids(group.key)
            if ids:
                chosen = ids[0]
                break
        if chosen is not None:
            shown: asyncio.Future[str] = asyncio.get_running_loop().create_future()

            def on_shown(task_id: str) -> None:
                if not shown.done():
                    shown.set_result(task_id)

            window.sig_dossier_shown.connect(on_shown)
            window.queue.select_task(chosen)
            await asyncio.wait_for(shown, 15)
        await asyncio.sleep(0.2)  # let layouts settle after the detail pane filled
        pixmap = window.grab()
        if not pixmap.save(str(out)):
            print(f"could not write {out}", file=sys.stderr)
            return 1
        print(f"saved {out} ({pixmap.width()}x{pixmap.height()}), selected task {chosen}")
        window.close()
        return 0
    finally:
        await launcher.close()


def main(argv: list[str] | None = None) -> int:
    import qasync

    from desktop.app import make_application

    parser = argparse.ArgumentParser(prog="python -m desktop.screenshot")
    parser.add_argument("out", type=Path)
    parser.add_argument("--db", default=None, help="workspace database URL (default: the configured one)")
    parser.add_argument("--size", default="1400x860")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    app = make_application()
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        code: int = loop.run_until_complete(_capture(args.out, args.db, (width, height)))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
