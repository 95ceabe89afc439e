"""A case bundle opened directly, read-only, with its verification result always in view.

The bundle is read by ``core.bundle.open_bundle`` (no database), off the UI thread; big texts stay
in the zip and are paged from it.
A bundle that fails verification still opens, under a red banner naming the first failures, so
an auditor can see what it claims without mistaking it for trustworthy evidence.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import (
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core.bundle import OpenedBundle, open_bundle
from core.bundle.signing import known_fingerprints
from core.tasks.dossier import TaskDossier
from core.tasks.evidence_reader import EvidenceReader
from desktop.ops import CoreOps
from desktop.presentation import STATUS_LABELS
from desktop.views.task.detail import TaskDetailView
from desktop.widgets.fit import size_within_screen
from desktop.widgets.plain import plain_label, plain_tooltip

OK_STYLE = "background:#dff3e4; color:#14532d; padding:8px; border-radius:4px;"
FAIL_STYLE = "background:#fde2e1; color:#7f1d1d; padding:8px; border-radius:4px; font-weight:bold;"


def dossier_from_bundle(opened: OpenedBundle, task_id: str) -> TaskDossier:
    return opened.dossier(task_id)


class BundleWindow(QMainWindow):
    """One opened bundle: its tasks on the left, the usual detail pane on the right."""

    def __init__(self, opened: OpenedBundle, *, available: QRect | None = None) -> None:
        """``available``: the screen area to fit (default: the window's screen's available area)."""
        super().__init__()
        self.opened = opened
        self.setWindowTitle(f"Case bundle — {opened.path.name} (read-only)")
        self.banner = plain_label(opened.banner())  # names files from an untrusted bundle
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(OK_STYLE if opened.verified else FAIL_STYLE)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if not opened.verified:
            problems = opened.report.failures + opened.load_problems
            self.banner.setToolTip(plain_tooltip("\n".join(problems[:50])))
        self.tasks = QListWidget()
        for bt in opened.tasks:
            item = QListWidgetItem(f"{bt.task.title}  [{STATUS_LABELS[bt.task.status]}]")
            item.setData(Qt.ItemDataRole.UserRole, bt.task.id)
            self.tasks.addItem(item)
        self.detail = TaskDetailView()
        # A format-2 bundle keeps big texts as zip members: the viewer pages them from the zip, as
        # the main window pages a workspace's chunk store, and never inflates a whole text.
        self.ops = CoreOps(self)
        self.ops.sig_failed.connect(lambda what, message: self.statusBar().showMessage(f"{what}: {message}"))
        self.detail.evidence_view.set_reader(EvidenceReader(lambda: opened), self.ops)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.tasks)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(1, 4)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addWidget(self.banner)
        layout.addWidget(splitter, 1)
        self.setCentralWidget(body)
        self.tasks.currentItemChanged.connect(self._show)
        if opened.tasks:
            self.tasks.setCurrentRow(0)
        size_within_screen(self, QSize(1300, 820), available)  # 820 px was taller than a laptop screen

    def _show(self, current: QListWidgetItem | None, _previous: QListWidgetItem | None = None) -> None:
        if current is None:
            self.detail.set_dossier(None)
            return
        self.detail.set_dossier(dossier_from_bundle(self.opened, str(current.data(Qt.ItemDataRole.UserRole))))


async def read_bundle(path: Path, *, db_url: str | None = None) -> OpenedBundle:
    """Read and verify off the UI thread; the caller builds the window (never inside a coroutine).

    The workspace's own signing key and the trusted list are the known signers (keyring and file
    reads, so in the same worker thread).
    """

    def load() -> OpenedBundle:
        return open_bundle(path, known_keys=known_fingerprints(db_url))

    return await asyncio.to_thread(load)
