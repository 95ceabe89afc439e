"""Save a PNG of the desk, each documented view reproducible from one command.

``python -m desktop.screenshot OUT.png --db URL [--task-id PREFIX]
[--tab evidence|history|validator|disagreements] [--run-live TEXT] [--import-bundle FILE]
[--search QUERY] [--script FILE] [--size WxH] [--window desk|calibration] [--team] [--bulk N]``

Opens the desk on the workspace at the desk's own default window size, waits until the queue is
filled and a task is selected (the one named, else the first needing review, else the first
listed) and its detail is shown, then grabs the window. Works under Xvfb and with
``QT_QPA_PLATFORM=offscreen``.

- ``--run-live TEXT`` creates a task whose scripted run is held mid-way (its second model call
  waits an hour), so the shot catches the streamed transcript and the evidence recorded so far
  of a RUNNING task; closing the tool cancels the run, as the desk's Abandon would.
- ``--search QUERY`` opens the search panel (Ctrl+Shift+F), runs QUERY and opens its first hit,
  so the shot shows the hit list and the passage it found, selected where it matched.
- ``--team`` opens the Batches and Schedules panes (the Team menu's) and narrows the queue to
  the newest batch, so its "Batch: X ✕" chip shows too.
- ``--import-bundle FILE`` imports an exported bundle read-only first (trusted: the tool only
  renders it) and selects its first imported task.

Screenshots never read or change the analyst's own state: the window layout lives in a
throw-away settings file and the configuration file is ignored, so two machines produce the same
picture. With no ``--script`` the demo's script answers, so the first-run banner (shown when no
provider is configured) does not cover the view being documented.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt

if TYPE_CHECKING:
    from desktop.views.window.main_window import MainWindow

DEFAULT_SIZE = (1400, 860)  # MainWindow's own default (window/layout.py, app.py): never a widened one
TABS = ("evidence", "history", "validator", "disagreements")
LIVE_FIRST = "Searching the corpus first; the answer follows once the sources are read."
LIVE_HOLD_S = 3600.0  # the second call waits this long: the shot is taken long before


class ShotError(Exception):
    """Bad input to the tool; printed as one line, exit code 2."""


@dataclass(frozen=True)
class Shot:
    out: Path
    db_url: str | None
    size: tuple[int, int] = DEFAULT_SIZE
    script: Path | None = None
    task_prefix: str | None = None
    tab: str = "evidence"
    run_live: str | None = None
    import_bundle: Path | None = None
    search: str | None = None
    window: str = "desk"
    team: bool = False
    bulk: int = 0  # select this many tasks of the first group and show the bulk confirmation


def live_script(text: str, base: Path, folder: Path) -> Path:
    """``base``'s conversations plus a held one for ``text``, written into ``folder``.

    The held conversation comes first and matches only the live task's text, so the demo's
    answers still serve every other task.
    """
    conversations: list[Any] = json.loads(base.read_text(encoding="utf-8"))["conversations"]
    held = {
        "model": "agent",
        "match": re.escape(text),
        "turns": [
            {"content": LIVE_FIRST, "tool_calls": [{"name": "search_corpus", "arguments": {"query": text}}]},
            {"content": "This answer is never reached.", "delay_s": LIVE_HOLD_S},
        ],
    }
    path = folder / "live-script.json"
    path.write_text(json.dumps({"conversations": [held, *conversations]}), encoding="utf-8")
    return path


async def _import_bundle(db_url: str | None, script: Path, bundle: Path) -> list[str]:
    from core.bundle import import_bundle
    from core.config import load_settings
    from core.errors import EvidenceDeskError
    from core.workspace import Workspace

    workspace = await Workspace.open(load_settings(db_url=db_url, script=script))
    try:
        summary = await import_bundle(workspace.store, bundle, trust=True)
    except EvidenceDeskError as exc:
        raise ShotError(str(exc)) from None
    finally:
        await workspace.close()
    ids = summary.imported_task_ids or summary.skipped_task_ids  # already there: show it all the same
    if not ids:
        raise ShotError(f"{bundle.name} holds no task to show")
    return ids


async def _until(check: Any, what: str, limit_s: float = 30.0) -> None:
    for _ in range(int(limit_s / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise ShotError(f"gave up waiting for {what} after {limit_s:.0f} s")


def _find_task(window: MainWindow, prefix: str) -> str:
    from desktop.presentation import GROUPS

    ids = {tid for group in GROUPS for tid in window.model.group_task_ids(group.key)}
    found = sorted(tid for tid in ids if tid.startswith(prefix.lower()))
    if len(found) != 1:
        why = "no task in the queue starts" if not found else f"{len(found)} tasks in the queue start"
        raise ShotError(f"--task-id {prefix}: {why} with it")
    return found[0]


def _first_task(window: MainWindow) -> str | None:
    from desktop.presentation import GROUPS

    for group in GROUPS:
        ids = window.model.group_task_ids(group.key)
        if ids:
            return ids[0]
    return None


async def _select(window: MainWindow, task_id: str) -> None:
    shown: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def on_shown(shown_id: str) -> None:
        if shown_id == task_id and not shown.done():
            shown.set_result(shown_id)

    window.sig_dossier_shown.connect(on_shown)
    await _until(lambda: window.queue.select_task(task_id), f"task {task_id[:12]} in the queue")
    await asyncio.wait_for(shown, 15)


async def _start_live(window: MainWindow, text: str) -> str:
    task = await window.services.tasks.create(text)
    await _select(window, task.id)
    window.services.tasks.start(task.id)
    detail = window.detail
    await _until(lambda: LIVE_FIRST in detail.answer_view.toPlainText(), "the live transcript")
    await _until(lambda: detail.evidence_view.current_evidence_id() == "E1", "the first recorded evidence")
    return str(task.id)


async def _search(window: MainWindow, query: str) -> str:
    """Run ``query`` in the search panel and open its first hit; returns the hit's task id."""
    panel = window.search_panel
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    opened: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def searched(n: int) -> None:
        if not done.done():
            done.set_result(n)

    def shown(hit: Any) -> None:
        if not opened.done():
            opened.set_result(hit)

    panel.sig_searched.connect(searched)
    panel.sig_hit_shown.connect(shown)
    panel.open_panel()
    panel.query_edit.setText(query)
    panel.run_search()
    if not await asyncio.wait_for(done, 60):
        raise ShotError(f"--search {query!r}: no hits in this workspace")
    panel.table.activated.emit(panel.model.index(0, 0))
    hit = await asyncio.wait_for(opened, 60)
    return str(hit.task_id)


async def _show_team(window: MainWindow) -> str:
    """Open the Batches and Schedules panes and narrow the queue to the newest batch; say what shows."""
    team = window.team
    team.show_panes()
    for pane in (team.batches, team.schedules):
        reading = pane.reload()
        if reading is not None:
            await reading
    if team.batches.rows:
        reload = team.batches.set_batch(team.batches.rows[0].batch_id)
        if reload is not None:
            await reload
        first = _first_task(window)  # the batch's task most in need of a decision
        if first is not None:
            await _select(window, first)
    return f", team panes {len(team.batches.rows)} batch(es) {len(team.schedules.rows)} schedule(s)"


def _show_tab(window: MainWindow, tab: str) -> None:
    detail = window.detail
    detail.tabs.setCurrentIndex(1 if tab == "history" else 0)
    if tab == "disagreements":
        detail.tabs.setCurrentWidget(detail.disagreement_view)
    if tab == "validator":
        detail.validator_view.tabs.setCurrentIndex(1)  # the prompt the validator was given


async def capture(shot: Shot) -> str:
    """Take ``shot``; returns the line to print. Raises ShotError on bad input.

    The shot's own files (the desk's ui state, a live run's script) live in a folder removed
    afterwards: every shot used to leave one in the temporary directory.
    """
    with tempfile.TemporaryDirectory(prefix="desk-shot-") as folder:
        return await _capture(shot, Path(folder))


async def _capture(shot: Shot, folder: Path) -> str:
    from core.resources import resource_path
    from desktop.app import DeskLauncher
    from desktop.models.queue_model import COL_TITLE

    script = shot.script or resource_path("demo", "script.json")
    if shot.run_live is not None:
        script = live_script(shot.run_live, script, folder)
    imported: list[str] = []
    if shot.import_bundle is not None:
        imported = await _import_bundle(shot.db_url, script, shot.import_bundle)
    state = QSettings(str(folder / "ui.ini"), QSettings.Format.IniFormat)
    launcher = DeskLauncher(shot.db_url, ui_state=state, script=str(script))
    try:
        window: MainWindow = await launcher.open()
        window.setWindowState(Qt.WindowState.WindowNoState)  # a small screen opens it maximised
        window.resize(*shot.size)
        window.show()
        await _until(lambda: window.model.loaded_once, "the queue to load")
        # Search, team and bulk install right after the first fill: the picture shows them too.
        await _until(lambda: window.first_fill.filled and not window.first_fill.pending, "deferred start-up")
        if shot.run_live is not None:
            chosen: str | None = await _start_live(window, shot.run_live)
        elif shot.search is not None:
            chosen = await _search(window, shot.search)
        else:
            if shot.task_prefix:
                chosen = _find_task(window, shot.task_prefix)
            else:
                chosen = imported[0] if imported else _first_task(window)
            if chosen is not None:
                await _select(window, chosen)
        if shot.search is None:
            _show_tab(window, shot.tab)
        team_note = await _show_team(window) if shot.team else ""
        chosen = window.queue.selected_task_id or chosen
        if shot.bulk:
            await _bulk_confirmation(window, shot.bulk)
        await asyncio.sleep(0.3)  # let layouts settle after the detail pane filled
        screen = window.screen()
        if shot.window != "desk":
            pixmap = await _calibration(window)
        elif shot.bulk and screen is not None:
            # The confirmation is its own window: grab the screen so the picture holds both.
            pixmap = screen.grabWindow(0)
        else:
            pixmap = window.grab()
        if not pixmap.save(str(shot.out)):
            raise ShotError(f"could not write {shot.out}")
        title_px = window.queue.tree.header().sectionSize(COL_TITLE)
        window.close()
        return (
            f"saved {shot.out} ({pixmap.width()}x{pixmap.height()}), selected task "
            f"{(chosen or '-')[:12]}, tab {shot.tab}{team_note}, title column {title_px} px"
        )
    finally:
        await launcher.close()


async def _calibration(window: MainWindow) -> Any:
    """Review → Calibration…, at the size it opens with, once its figures and batches are in."""
    window.calibration.action.trigger()
    view = window.calibration.view
    assert view is not None  # the action opens it
    await _until(lambda: view.calibration is not None and view.batches_loaded, "the calibration figures")
    await asyncio.sleep(0.3)
    return view.grab()


async def _bulk_confirmation(window: MainWindow, n: int) -> None:
    """Select ``n`` tasks of the current task's group and open the bulk Satisfied confirmation."""
    from PySide6.QtCore import QItemSelection, QItemSelectionModel

    from core.tasks.bulk import BulkAction

    current = window.queue.tree.currentIndex()
    group = current.parent()
    model = window.model
    last = min(n, model.rowCount(group)) - 1
    window.queue.tree.selectionModel().select(
        QItemSelection(model.index(0, 0, group), model.index(last, 0, group)),
        QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
    )
    window.bulk.ask(BulkAction.SATISFIED)
    await _until(lambda: window.bulk.dialog is not None, "the bulk confirmation")
    dialog = window.bulk.dialog
    assert dialog is not None
    dialog.move(window.geometry().center() - dialog.rect().center())


def _size(value: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in value.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {value!r}") from None
    return width, height


def parse_shot(argv: list[str] | None) -> Shot:
    parser = argparse.ArgumentParser(prog="python -m desktop.screenshot")
    parser.add_argument("out", type=Path)
    parser.add_argument("--db", default=None, help="workspace database URL (default: the configured one)")
    parser.add_argument("--size", type=_size, default=DEFAULT_SIZE, help="default: the desk's own, 1400x860")
    parser.add_argument("--script", type=Path, default=None, help="scripted answers (default: the demo's)")
    parser.add_argument(
        "--task-id", default=None, metavar="PREFIX", help="select the task with this id prefix"
    )
    parser.add_argument("--tab", choices=TABS, default="evidence", help="the detail tab to show")
    parser.add_argument("--run-live", default=None, metavar="TEXT", help="show a running task asking TEXT")
    parser.add_argument(
        "--window", choices=("desk", "calibration"), default="desk", help="the window to grab"
    )
    parser.add_argument(
        "--import-bundle", type=Path, default=None, metavar="FILE", help="import read-only first"
    )
    parser.add_argument("--search", default=None, metavar="QUERY", help="search, then open the first hit")
    parser.add_argument("--team", action="store_true", help="show the Batches and Schedules panes")
    parser.add_argument(
        "--bulk", type=int, default=0, metavar="N", help="select N tasks and show the bulk confirmation"
    )
    args = parser.parse_args(argv)
    if args.search is not None and (args.run_live is not None or args.task_id or not args.search.strip()):
        parser.error("--search needs a query, and picks its own task: no --run-live or --task-id with it")
    if args.run_live is not None and (args.task_id or args.import_bundle):
        parser.error("--run-live shows its own task: no --task-id or --import-bundle with it")
    if args.run_live is not None and not args.run_live.strip():
        parser.error("--run-live needs the task's text")
    return Shot(
        out=args.out,
        db_url=args.db,
        size=args.size,
        script=args.script,
        task_prefix=args.task_id,
        tab=args.tab,
        run_live=args.run_live,
        import_bundle=args.import_bundle,
        search=args.search,
        window=args.window,
        team=args.team,
        bulk=args.bulk,
    )


def main(argv: list[str] | None = None) -> int:
    import qasync

    from desktop.app import make_application

    shot = parse_shot(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # The analyst's config file would make the picture depend on the machine.
    os.environ["EVIDENCE_DESK_CONFIG_FILE"] = str(Path(tempfile.mkdtemp()) / "none.toml")
    if "EVIDENCE_DESK_CORPUS" not in os.environ:
        from core.resources import resource_path

        os.environ["EVIDENCE_DESK_CORPUS"] = str(resource_path("demo", "corpus"))
    app = make_application()
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    from core.errors import EvidenceDeskError

    with loop:
        try:
            line = loop.run_until_complete(capture(shot))
        except (ShotError, EvidenceDeskError) as exc:
            print(f"screenshot: {exc}", file=sys.stderr)
            return 2
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
