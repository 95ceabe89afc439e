"""Left half of the task detail: the evidence tree and a viewer for the selected item."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QSplitter, QTreeView, QVBoxLayout, QWidget

from core.domain.evidence import TaskEvidencePacket
from desktop.models.evidence_model import EvidenceTreeModel
from desktop.widgets.plain import PlainToolTipDelegate
from desktop.widgets.text_viewer import TextViewer

__all__ = ["EvidenceView"]


class EvidenceView(QWidget):
    """Tree of the packet on top, full content of the current item below."""

    sig_evidence_selected = Signal(str)
    """Emitted with the evidence id (``""`` for items without one) when the current item changes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = EvidenceTreeModel(self)
        self.tree = QTreeView(self)
        self.tree.setModel(self.model)
        self.tree.setItemDelegate(PlainToolTipDelegate(self.tree))  # tool output is text
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.tree.header()
        header.setStretchLastSection(False)
        # The item column carries the structure (run, node, message, tool), so it keeps a readable
        # width; details stretch into what is left and scroll horizontally when the pane is narrow.
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(0, 210)
        header.setMinimumSectionSize(40)
        self.viewer = TextViewer(self)
        self._shown_uid: int | None = None

        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.tree)
        splitter.addWidget(self.viewer)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.tree.selectionModel().currentChanged.connect(self._on_current_changed)

    def set_packet(self, packet: TaskEvidencePacket | None) -> None:
        self._shown_uid = None
        self.model.set_packet(packet)
        self.tree.expandAll()
        self._collapse_transcripts(QModelIndex())
        self.viewer.set_text(
            "" if packet is not None else "No evidence packet was recorded for this attempt."
        )
        if packet is not None:
            self.select_evidence("E1")  # open on the first piece of evidence, not an empty viewer

    def set_packets(self, packets: list[TaskEvidencePacket | None]) -> None:
        """Attempts 1..N of the task, the last one under review: grouped by attempt, new items marked.

        Opens on the first item the attempt under review gathered (earlier evidence is one click
        away). Without a packet for the attempt under review this is ``set_packet(None)``.
        """
        if not packets or packets[-1] is None:
            self.set_packet(None)
            return
        known = [p for p in packets if p is not None]
        self._shown_uid = None
        self.model.set_packets(known)
        self.tree.expandAll()
        self._collapse_transcripts(QModelIndex())
        self.viewer.set_text("")
        first_new = f"E{known[-1].evidence_id_start}" if known[-1].evidence_id_start else "E1"
        if not self.select_evidence(first_new):
            self.select_evidence("E1")

    def _collapse_transcripts(self, parent: QModelIndex) -> None:
        """Transcripts are long and secondary to the tool results: start them folded."""
        for row in range(self.model.rowCount(parent)):
            index = self.model.index(row, 0, parent)
            node = self.model.node(index)
            if node is not None and node.kind == "transcript":
                self.tree.collapse(index)
            else:
                self._collapse_transcripts(index)

    def current_evidence_id(self) -> str:
        node = self.model.node(self.tree.currentIndex())
        return node.evidence_id if node is not None else ""

    def select_evidence(self, evidence_id: str) -> bool:
        """Make the item with ``evidence_id`` current (its content then shows in the viewer)."""
        index = self.model.index_for_evidence_id(evidence_id)
        if not index.isValid():
            return False
        self.select_index(index)
        return True

    def select_index(self, index: QModelIndex) -> None:
        self.tree.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        )
        self.tree.scrollTo(index)

    def show_quote(self, evidence_id: str, quote: str) -> bool:
        """Select the cited item and highlight the quote; the status line says what went wrong if not."""
        if not self.select_evidence(evidence_id):
            self.viewer.status.setText(f"{evidence_id} is not an item of this attempt's evidence.")
            self.viewer.status.setVisible(True)
            return False
        if self.viewer.highlight(quote):
            return True
        self.viewer.status.setText(f"The quoted text was not found in {evidence_id}.")
        self.viewer.status.setVisible(True)
        return False

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        node = self.model.node(current)
        if node is None:
            return
        if node.uid != self._shown_uid:
            self._shown_uid = node.uid
            self.viewer.set_text(node.content or "")
        self.sig_evidence_selected.emit(node.evidence_id)
