"""Desk start-up: QApplication on a qasync loop, a window painted before anything slow.

Order matters for how fast the desk feels: a light boot window is shown first, already holding
the live queue (its model and view, nothing else of the desk) seeded with the first page read
with the standard library's sqlite3 (``core.queue_peek``), so the analyst reads and moves through
the queue while SQLAlchemy and the store load behind it. Then the workspace opens (the store
only: the LLM gateway and the tools are built on first use), crash recovery runs on the loop and
the main window takes the queue over, selection and all, and replaces the boot window; the
store's first reload replaces the seeded rows in place. Only once that reload has been painted do
the rest start: the search, team and bulk features install, the keyring is read in a worker (a
run waits for it), and litellm (seconds of imports) is warmed in another.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSettings, Qt
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow, QWidget

from desktop.quiet_gc import freeze_long_lived
from desktop.views.queue.boot import BootQueue
from desktop.views.window.layout import restore_columns, restore_geometry, restore_split

log = logging.getLogger(__name__)

STYLE_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "resources", "styles", "desk.qss"
)


def parse_desk_options(args: list[str]) -> tuple[str | None, str | None]:
    """``(database URL, script path)`` from ``[desk] [--db URL] [--script FILE]``."""
    rest = args[1:] if args and args[0] == "desk" else list(args)
    found: dict[str, str] = {}
    while rest:
        if len(rest) < 2 or rest[0] not in ("--db", "--script") or not rest[1] or rest[0] in found:
            raise SystemExit(f"usage: evidence-desk [--db URL] [--script FILE] (got {' '.join(args)!r})")
        found[rest[0]] = rest[1]
        rest = rest[2:]
    return found.get("--db"), found.get("--script")


def parse_desk_args(args: list[str]) -> str | None:
    """The database URL from ``[desk] [--db URL] [--script FILE]`` (the entry point only routes those here)."""
    return parse_desk_options(args)[0]


def speed_up_pyside_import_hook() -> None:
    """Make PySide6's per-import check read the file rather than ``inspect.getsource`` it.

    Once PySide6 is loaded, every later import runs its ``__feature__`` hook, which asks whether
    the module's source mentions "PySide6" through ``inspect.getsource`` (PYSIDE-2029). For the
    ~500 modules the desk imports after Qt, that costs a fifth of start-up. The question and its
    answer stay the same; only the reading is direct. Anything unusual (no ``.py`` file, a Qt
    build without the hook) keeps PySide6's own check.
    """
    feature = sys.modules.get("shibokensupport.feature")
    original = getattr(feature, "_mod_uses_pyside", None)
    if feature is None or original is None or getattr(original, "direct_read", False):
        return

    def mod_uses_pyside(module: Any) -> bool:
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            try:
                with open(path, "rb") as fh:
                    return b"PySide6" in fh.read()
            except OSError:
                pass
        return bool(original(module))

    mod_uses_pyside.direct_read = True  # type: ignore[attr-defined]
    setattr(feature, "_mod_uses_pyside", mod_uses_pyside)  # noqa: B010  (a private name of PySide6)


def make_application() -> QApplication:
    # Pydantic scans every installed distribution's entry points for plugins when it builds its
    # first model (~50 ms of the boot window's ~150 ms of queue imports); the desk uses none.
    # An analyst's own setting still wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    speed_up_pyside_import_hook()
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("Evidence Desk")
    app.setOrganizationName("evidence-desk")
    # Fusion follows the platform's light or dark colour scheme (Qt >= 6.5) and looks the same
    # everywhere; the stylesheet only adds accents that read from the palette.
    app.setStyle("Fusion")
    app.setDesktopFileName("evidence-desk")  # matches packaging/evidence-desk.desktop
    icon = os.path.join(os.path.dirname(STYLE_FILE), os.pardir, "icons", "evidence-desk.svg")
    if os.path.exists(icon):
        from PySide6.QtGui import QIcon

        app.setWindowIcon(QIcon(icon))
    try:
        with open(STYLE_FILE, encoding="utf-8") as fh:
            app.setStyleSheet(fh.read())
    except OSError:
        log.warning("stylesheet %s missing", STYLE_FILE)
    return app


class PaintProbe(QObject):
    """Calls back once, on a widget's first paint (start-up timing and the screenshot tool)."""

    def __init__(self, widget: QWidget, callback: Callable[[], None]) -> None:
        super().__init__(widget)
        self._callback: Callable[[], None] | None = callback
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self._callback is not None:
            callback, self._callback = self._callback, None
            callback()
        return False


async def first_paint(painted: asyncio.Event, limit_s: float = 0.5) -> None:
    """Let Qt paint the boot window before the (synchronous) core imports start."""
    try:
        await asyncio.wait_for(painted.wait(), limit_s)
    except TimeoutError:
        log.debug("no paint event within %.1f s (hidden or minimised start)", limit_s)


class BootWindow(QMainWindow):
    """The window painted first; ``queue`` is the seeded live queue, or None (a label instead)."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: BootQueue | None = None


def boot_window(ui_state: QSettings, db_url: str | None = None, *, peek: bool = True) -> BootWindow:
    """The window painted first: the live queue seeded from SQLite's first page, if it can.

    The read costs a few milliseconds of stdlib sqlite3 and the queue's own modules (no store,
    no SQLAlchemy) against the second of imports the store needs, so the analyst reads and moves
    through the queue while the rest of the desk loads behind it. Needs the event loop set (a
    restored sort asks the queue, which waits for the store).
    """
    window = BootWindow()
    window.setWindowTitle("Evidence Desk")
    restore_geometry(window, ui_state)
    window.queue = None
    if peek:
        try:
            window.queue = _seeded_queue(window, ui_state, db_url)
        except Exception:  # the store opens next and reports what is wrong; start-up goes on
            log.warning(
                "the queue's first page could not be shown before the workspace opened", exc_info=True
            )
    if window.queue is None:
        window.setCentralWidget(_opening_label())
    return window


def _opening_label() -> QLabel:
    label = QLabel("Opening the workspace…")
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    return label


def _seeded_queue(window: BootWindow, ui_state: QSettings, db_url: str | None) -> BootQueue | None:
    """The queue's model and view, seeded with the first page in the analyst's saved order.

    None when there is nothing certain to show (no SQLite workspace, an unreadable one, no
    tasks: the main window's empty state says what to do, a blank tree would not). Raises when a
    stored row is not one the store would hand over (the caller shows the label instead); either
    way nothing of the half-built queue is left waiting.
    """
    from core.queue_peek import workspace_path

    path = workspace_path(db_url)
    if path is None or not path.is_file():
        return None  # never create a workspace: opening it is the store's job
    from PySide6.QtWidgets import QSplitter

    from core.queue_peek import peek_queue
    from core.tasks.queue import snapshot_from_peek
    from desktop.models.queue_model import PendingQueue, TaskQueueModel
    from desktop.ops import CoreOps
    from desktop.views.queue.view import QueueView

    ops = CoreOps()
    model = TaskQueueModel(PendingQueue(), ops)
    view = QueueView(model)
    splitter = QSplitter(Qt.Orientation.Horizontal)
    splitter.addWidget(view)
    splitter.addWidget(_opening_label())
    seeded = False
    try:
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        restore_split(splitter, ui_state)  # as the main window will: the queue keeps its width
        restore_columns(view.tree, ui_state)  # the saved sort sets the model's order
        sort = model.sort_order
        peeked = peek_queue(
            path, sort_column=sort.column.value, descending=sort.descending, limit=model.first_page_size
        )
        if peeked is None or not any(peeked.counts.values()):
            return None
        model.seed(snapshot_from_peek(peeked, sort))
        seeded = True
    finally:
        if not seeded:
            ops.cancel_all()  # a restored sort's reload waits for a store this queue will never get
            splitter.deleteLater()
    window.setCentralWidget(splitter)
    view.tree.setFocus(Qt.FocusReason.OtherFocusReason)  # arrow keys move through it at once
    return BootQueue(model=model, view=view, ops=ops)


def queue_rows_shown(boot: QMainWindow) -> int:
    """How many task rows the boot window's queue holds (0: it says "Opening the workspace…")."""
    queue = getattr(boot, "queue", None)
    return queue.model.loaded_rows() if isinstance(queue, BootQueue) else 0


class DeskLauncher:
    """Opens the workspace and the main window; owns what must be closed at exit."""

    def __init__(
        self,
        db_url: str | None,
        *,
        ui_state: QSettings | None = None,
        script: str | None = None,
        demo_builder: Callable[[Any], Any] | None = None,
    ) -> None:
        """``demo_builder``: what fills the demo's workspace (default: ``core.demo``'s real runs)."""
        self.db_url = db_url
        self.demo_builder = demo_builder
        self.script = script
        self.first_run = False  # no provider configured: the replay model answers, a banner says so
        self.banner: Any = None
        self.ui_state = ui_state or QSettings("evidence-desk", "desk")
        self.window: Any = None  # MainWindow once open
        self.services: Any = None
        self.keys: Any = None  # core.secrets.KeyringLoad once open() began
        self._background: set[asyncio.Task[Any]] = set()
        self._boot_queue: BootQueue | None = None  # its reads wait for the store until the window takes it

    async def open(self, boot_queue: BootQueue | None = None) -> Any:
        """Settings, workspace, crash recovery, main window. Raises EvidenceDeskError on bad input.

        ``boot_queue``: the boot window's live queue, which the main window takes over.

        The keyring (a few hundred ms: backend discovery, maybe a desktop service) is not read
        here: it starts in a worker once the queue has filled, and the task service waits for it
        before its first run, so no run reaches a provider without its keys.
        """
        from core.secrets import KeyringLoad

        self.keys = KeyringLoad()
        self._boot_queue = boot_queue
        return await self._open()

    async def _open(self) -> Any:
        from core.config import load_settings
        from core.tasks.recovery import recover_interrupted
        from core.workspace import Workspace, is_demo_workspace
        from desktop.services import DeskServices
        from desktop.views.window.first_run import install_first_run_banner, replay_if_unconfigured
        from desktop.views.window.main_window import MainWindow
        from desktop.views.window.workspaces import remember_workspace

        settings = load_settings(db_url=self.db_url, script=self.script)
        settings, self.first_run = await replay_if_unconfigured(settings)
        workspace = await Workspace.open(settings)
        boot_queue = self._boot_queue
        services = DeskServices.for_workspace(workspace, ops=boot_queue.ops if boot_queue else None)
        services.keys = self.keys
        services.launch_overrides = {"script": self.script}
        self.services = services
        recovery_error = None
        try:
            recovered = await recover_interrupted(workspace)  # announced on the bus, buffered by the bridge
        except Exception as exc:  # the desk still opens; the analyst is told
            log.exception("crash recovery failed")
            recovered, recovery_error = [], exc
        window = MainWindow(
            services,
            ui_state=self.ui_state,
            demo_builder=self.demo_builder,
            defer_features=True,
            boot_queue=boot_queue,
        )
        window.after_first_fill(self.keys.start)  # once: a second start does nothing
        self.window = window
        window.workspaces.connect_switch(self.switch_to)
        remember_workspace(self.ui_state, settings.db_url)
        if self.first_run and not is_demo_workspace(settings.db_url):
            self.banner = install_first_run_banner(window)
        window.start()
        if recovery_error is not None:
            window.show_error(f"Recovering interrupted tasks failed: {recovery_error!r}")
        elif recovered:
            window.show_info(
                f"{len(recovered)} task(s) interrupted by an earlier exit were moved to review or failed."
            )
        return window

    def switch_to(self, target: str, build_demo: bool = False) -> None:
        """File → Open workspace, the demo's, a recent one: the window is replaced by one on ``target``."""
        task = asyncio.get_running_loop().create_task(self.switch(target, build_demo=build_demo))
        self._background.add(task)
        task.add_done_callback(self._background_done)

    async def switch(self, target: str, *, build_demo: bool = False) -> Any:
        """Open ``target`` in a new window, then close the old window and its workspace cleanly
        (its watcher, claims, bridge and store); returns the window on screen afterwards.

        Refused, with the old window left as it was, while a run is in progress here (it would be
        cancelled half-way) or when ``target`` cannot be opened. ``build_demo``: load the demo's
        tasks into the new workspace (its own, ``demo.sqlite3``), as the first-run banner asks.
        """
        from core.errors import EvidenceDeskError
        from core.workspace import missing_workspace, shareable_name

        old_window, old_services = self.window, self.services
        if old_window is None or old_services is None:
            return old_window
        if old_services.tasks_started and getattr(old_services.tasks, "_running", {}):
            old_window.show_error(
                "A task is running in this workspace: let it finish, or abandon it, before opening another."
            )
            return old_window
        if shareable_name(target) == shareable_name(old_services.workspace.settings.db_url):
            if build_demo:
                old_window.load_demo()  # this is the demo's workspace already
            return old_window
        gone = missing_workspace(target)
        if gone is not None and not build_demo:
            old_window.show_error(f"There is no workspace at {gone} any more.")
            return old_window
        previous_url, self.db_url, self._boot_queue, self.banner = self.db_url, target, None, None
        try:
            window = await self._open()
        except EvidenceDeskError as exc:
            if self.services is not old_services:
                await self.services.workspace.close()
            self.db_url, self.window, self.services = previous_url, old_window, old_services
            old_window.show_error(f"Cannot open the workspace: {exc}")
            return old_window
        window.setGeometry(old_window.geometry())
        window.show()
        old_window.close()  # saves its layout; stops its watcher, claims and bridge
        old_window.deleteLater()
        await self._close_services(old_services)
        if build_demo:
            window.load_demo()
        return window

    async def _close_services(self, services: Any) -> None:
        """Everything of one workspace the desk opened: operations, runs, the store."""
        services.ops.cancel_all()
        await services.ops.wait_idle()
        if services.tasks_started:  # built on first use: without it nothing ran here
            for task_id in list(getattr(services.tasks, "_running", {})):
                await services.tasks.cancel(task_id)
        await services.workspace.close()

    def warm_up_in_background(self) -> None:
        """litellm's import (seconds) runs in a worker after the window is up.

        Not before the queue's first rows: the import would hold the interpreter lock the first
        fill needs (``run_desk`` passes this to ``MainWindow.after_first_fill``).
        """

        from core.workspace import Workspace

        async def warm() -> None:
            await asyncio.to_thread(Workspace.warm_up_models)
            freeze_long_lived()  # litellm's tables live as long as the process (desktop/quiet_gc.py)

        task = asyncio.get_running_loop().create_task(warm())
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("background work (warm-up, a workspace switch) failed", exc_info=task.exception())

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()
        if self.keys is not None and self.keys.started:
            await asyncio.to_thread(self.keys.wait)  # no worker outlives the desk
        if self.services is None:
            if self._boot_queue is not None:  # the workspace never opened: nothing will answer these
                self._boot_queue.ops.cancel_all()
                await self._boot_queue.ops.wait_idle()
            return
        await self._close_services(self.services)


def run_desk(args: list[str]) -> int:
    import qasync

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    db_url, script = parse_desk_options(args)
    app = make_application()
    from desktop.views.window.workspaces import ask_at_start, choose_at_start, resolve_named_workspace

    db_url, go_on = resolve_named_workspace(db_url, ask_at_start, choose_at_start)  # before the loop runs
    if not go_on:
        return 0
    from desktop.desk_log import install_desk_log

    install_desk_log()  # warnings, uncaught exceptions and crashes to the user log directory
    launcher = DeskLauncher(db_url, script=script)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    boot = boot_window(launcher.ui_state, db_url)
    painted = asyncio.Event()
    timing = os.environ.get("EVIDENCE_DESK_EXIT_AFTER_PAINT")  # start-up measurement (packaging, benchmarks)

    def boot_painted() -> None:
        painted.set()
        if timing:
            print(f"boot-painted-at={time.time():.6f}", file=sys.stderr, flush=True)

    PaintProbe(boot, boot_painted)
    boot.show()
    exit_code = 0

    async def main() -> None:
        nonlocal exit_code
        closed = asyncio.Event()
        app.aboutToQuit.connect(closed.set)
        await first_paint(painted)
        from core.errors import EvidenceDeskError

        try:
            window = await launcher.open(boot.queue)
        except EvidenceDeskError as exc:
            exit_code = 4
            label = QLabel()
            label.setTextFormat(Qt.TextFormat.PlainText)  # the message quotes paths and URLs
            label.setText(
                f"Evidence Desk could not open the workspace:\n\n{exc}\n\nClose this window to exit."
            )
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            boot.setCentralWidget(label)  # replaces the seeded queue, if one was shown
            await closed.wait()
            return
        window.setGeometry(boot.geometry())
        if timing:

            def main_painted() -> None:
                print(f"window-painted-at={time.time():.6f}", file=sys.stderr, flush=True)
                app.quit()

            PaintProbe(window, main_painted)
        window.show()
        boot.close()
        freeze_long_lived()  # start-up's objects leave the full collections' walk (desktop/quiet_gc.py)
        window.after_first_fill(launcher.warm_up_in_background)
        await closed.wait()

    with loop:
        loop.run_until_complete(main())
        loop.run_until_complete(launcher.close())
    return exit_code


if __name__ == "__main__":
    raise SystemExit(run_desk(sys.argv[1:]))
