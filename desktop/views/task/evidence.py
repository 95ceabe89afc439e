"""Left half of the task detail: the evidence tree and a viewer for the selected item.

A big item (its text in the workspace's chunk store) is never held whole: with a reader set
(``set_reader``), the viewer shows it a page at a time, and finding a word, a validator's quote or
a search hit runs in core, chunk by chunk, then opens the page that holds the match. Every read is
tagged; a reply for an item or page the analyst has since left is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QSplitter, QTreeView, QVBoxLayout, QWidget

from core.domain.evidence import TaskEvidencePacket
from core.errors import EvidenceDeskError
from core.evidence.render import EvidenceItem, first_new_id
from desktop.models.evidence_model import EvidenceNode, EvidenceTreeModel
from desktop.widgets.plain import PlainToolTipDelegate
from desktop.widgets.text_viewer import TextViewer

if TYPE_CHECKING:
    from core.tasks.dossier import EvidencePage
    from core.tasks.evidence_reader import EvidenceReader
    from desktop.ops import CoreOps

__all__ = ["EvidenceView"]

COUNT_LIMIT = 1000  # a huge item's matches are counted up to here, then shown as "1,000+"


def _same_text(a: EvidenceNode, b: EvidenceNode) -> bool:
    return (
        a.item is not None
        and b.item is not None
        and a.paged
        and a.item.content_ref == b.item.content_ref
        and a.item.content_range == b.item.content_range
    )


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
        self._reader: EvidenceReader | None = None
        self._ops: CoreOps | None = None
        self._token = 0  # bumped by every new read; a reply carrying an older one is stale
        self._paged: EvidenceNode | None = None  # the big item on screen
        self._match: tuple[int, int] | None = None  # the find bar's current match, item offsets
        self._shown_packet: tuple[str, int] | None = None  # (task id, attempt) of the tree shown

        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.tree)
        splitter.addWidget(self.viewer)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.tree.selectionModel().currentChanged.connect(self._on_current_changed)
        self.viewer.sig_page_requested.connect(lambda offset: self._load_page(offset))

    def set_reader(self, reader: EvidenceReader, ops: CoreOps) -> None:
        """Page big items through ``reader``, running its reads with ``ops`` (the main window's)."""
        self._reader = reader
        self._ops = ops
        self.viewer.find_bar.remote = self._find_remote

    def set_packet(self, packet: TaskEvidencePacket | None) -> None:
        self._shown_packet = None
        self._shown_uid = None
        self._paged = None
        self._token += 1  # nothing read for the last tree is wanted now
        self.model.set_packet(packet)
        self.tree.expandAll()
        self._collapse_transcripts(QModelIndex())
        self.viewer.set_text(
            "" if packet is not None else "No evidence packet was recorded for this attempt."
        )
        if packet is not None:
            self.select_evidence("E1")  # open on the first piece of evidence, not an empty viewer

    def set_packets(
        self, packets: list[TaskEvidencePacket | None], items: list[EvidenceItem] | None = None
    ) -> None:
        """Attempts 1..N of the task, the last one under review: grouped by attempt, new items marked.

        Opens on the first item the attempt under review gathered (earlier evidence is one click
        away). Without a packet for the attempt under review this is ``set_packet(None)``.
        ``items`` are the packets' rendered items when the dossier rendered them already (off the
        GUI thread); the view then only builds its rows.
        """
        if not packets or packets[-1] is None:
            self.set_packet(None)
            return
        known = [p for p in packets if p is not None]
        # A reload of the attempt on screen (a live update, a claim's notice) keeps the item read.
        shown = (known[-1].task_id, known[-1].attempt_index)
        keep = self.current_evidence_id() if shown == self._shown_packet else ""
        was_paged = self._paged
        self._shown_packet = shown
        self._shown_uid = None
        self.model.set_packets(known, items)
        self.tree.expandAll()
        self._collapse_transcripts(QModelIndex())
        if keep:
            index = self.model.index_for_evidence_id(keep)
            node = self.model.node(index)
            if node is not None and was_paged is not None and _same_text(node, was_paged):
                # The same stored text: the page, the match and any read in flight stay valid.
                self._paged = node
                self._shown_uid = node.uid
                self.select_index(index)
                return
            self.viewer.set_text("")
            if self.select_evidence(keep):
                return
        self.viewer.set_text("")
        if not self.select_evidence(first_new_id(known)):
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
        """Select the cited item and highlight the quote; the status line says what went wrong if not.

        In a paged item the quote is looked for in core and its page opened when found (True
        then means the search started)."""
        if not self.select_evidence(evidence_id):
            self.viewer.status.setText(f"{evidence_id} is not an item of this attempt's evidence.")
            self.viewer.status.setVisible(True)
            return False
        if self._paged is not None:
            self._find_in_item(
                quote, 0, quote=True, missing=f"The quoted text was not found in {evidence_id}."
            )
            return True
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
            self._token += 1  # whatever was still being read for the last item is stale now
            self._match = None
            if node.paged and node.item is not None and self._reader is not None:
                self._paged = node
                self.viewer.begin_paged(node.length, self._reader.page_chars)
                self._load_page(0)
            else:
                self._paged = None
                self.viewer.set_text(node.content or "")
        self.sig_evidence_selected.emit(node.evidence_id)

    # ------------------------------------------------------------------ paged items
    def show_match(self, evidence_id: str, needle: str, after: int = 0) -> bool:
        """Select the item and the first occurrence of ``needle`` at or after ``after`` (a search
        hit); in a paged item its page is opened. False when the item is not in this attempt."""
        if not self.select_evidence(evidence_id):
            return False
        bar = self.viewer.find_bar
        if self._paged is None:
            return False  # the caller walks the whole text it has on screen
        bar.edit.blockSignals(True)
        bar.edit.setText(needle)
        bar.edit.blockSignals(False)
        bar.show()
        self._find_in_item(needle, after, quote=False, missing=f"{needle!r} was not found in {evidence_id}.")
        return True

    def is_paged(self) -> bool:
        return self._paged is not None

    def _run(
        self, coro: Coroutine[Any, Any, Any], on_done: Callable[[Any], None], token: int, what: str
    ) -> None:
        assert self._ops is not None

        def done(value: Any) -> None:
            if token == self._token:
                on_done(value)

        def failed(exc: BaseException) -> bool:
            if token != self._token:
                return True  # the analyst moved on: nobody is waiting for this
            if isinstance(exc, EvidenceDeskError):
                self.viewer.show_error(str(exc))
                return True
            return False

        self._ops.run(coro, what=what, on_done=done, on_error=failed)

    def _load_page(self, offset: int, select: tuple[int, int] | None = None) -> None:
        node, reader = self._paged, self._reader
        if node is None or node.item is None or reader is None:
            return
        self._token += 1

        def shown(page: EvidencePage) -> None:
            self.viewer.show_page(page.offset, page.text, page.total, select)

        self._run(reader.page(node.item, offset), shown, self._token, "Reading evidence")

    def _find_remote(self, needle: str, direction: int) -> None:
        """The find bar in a paged item: 0 from the page on screen, 1 after the match, -1 before it."""
        if self._match is not None and direction:
            start = self._match[1] if direction > 0 else self._match[0]
        else:
            start = self.viewer.page_offset
        self._find_in_item(needle, start, quote=False, backward=direction < 0, wrap=True)

    def _find_in_item(
        self,
        needle: str,
        start: int,
        *,
        quote: bool,
        backward: bool = False,
        wrap: bool = False,
        missing: str = "",
    ) -> None:
        node, reader = self._paged, self._reader
        if node is None or node.item is None or reader is None:
            return
        item, total = node.item, node.length

        async def search() -> tuple[int, int] | None:
            found = await reader.find(item, needle, start, backward=backward, quote=quote)
            if found is None and wrap:  # round the end, as the find bar does in a whole text
                found = await reader.find(
                    item, needle, total if backward else 0, backward=backward, quote=quote
                )
            return found

        def found(span: tuple[int, int] | None) -> None:
            bar = self.viewer.find_bar
            if span is None:
                self._match = None
                bar.show_remote("no matches")
                if missing:
                    self.viewer.show_error(missing)
                return
            self._match = span
            bar.show_remote(f"at character {span[0] + 1:,}")
            page = reader.page_start(span[0], span[1])
            if page == self.viewer.page_offset and self.viewer.text():
                self.viewer.select_span(span[0] - page, span[1] - page)
            else:
                self._load_page(page, select=span)
            if not quote:
                self._count(needle, span)

        self._token += 1
        self._run(search(), found, self._token, "Finding in evidence")

    def _count(self, needle: str, span: tuple[int, int]) -> None:
        """The number of matches, in the background: the match is shown before it is known."""
        node, reader = self._paged, self._reader
        if node is None or node.item is None or reader is None:
            return
        token = self._token

        def counted(n: int) -> None:
            if self._match == span:
                more = "+" if n >= COUNT_LIMIT else ""
                self.viewer.find_bar.show_remote(f"at character {span[0] + 1:,} · {n:,}{more} in all")

        def failed(exc: BaseException) -> bool:
            return True  # the count is a nicety; a read error already shows through the page

        assert self._ops is not None
        self._ops.run(
            reader.count(node.item, needle, COUNT_LIMIT),
            what="Counting matches",
            on_done=lambda n: counted(n) if token <= self._token else None,
            on_error=failed,
        )
