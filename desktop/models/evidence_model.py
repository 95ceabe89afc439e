"""The evidence tree's Qt model: core's outline of an attempt's evidence (``core.evidence.outline``),
shown row for row.

Which rows exist and which ids they carry is core's rule alone; this model only answers Qt's
questions about the outline (its rows, their text, colour and font) and finds a row by its id.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from core.domain.evidence import TaskEvidencePacket
from core.evidence.outline import EvidenceNode, build_evidence_tree, build_task_evidence_tree
from core.evidence.render import EvidenceItem
from core.validation.citations import normalise_id

__all__ = ["EvidenceNode", "EvidenceTreeModel"]

AnyIndex = QModelIndex | QPersistentModelIndex


class EvidenceTreeModel(QAbstractItemModel):
    """Columns: item, evidence id, detail (tool / status / finish reason / error / size)."""

    COLUMNS = ("Item", "Evidence id", "Detail")
    ContentRole = Qt.ItemDataRole.UserRole + 1
    EvidenceIdRole = Qt.ItemDataRole.UserRole + 2
    KindRole = Qt.ItemDataRole.UserRole + 3
    NewRole = Qt.ItemDataRole.UserRole + 4

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._root = EvidenceNode(label="", kind="root")
        self._by_uid: dict[int, EvidenceNode] = {}
        self._by_eid: dict[str, EvidenceNode] = {}

    # ------------------------------------------------------------------ content
    def set_packet(self, packet: TaskEvidencePacket | None) -> None:
        self.set_tree(build_evidence_tree(packet))

    def set_packets(self, packets: list[TaskEvidencePacket], items: list[EvidenceItem] | None = None) -> None:
        """Attempts 1..N of a task, N under review (see :func:`build_task_evidence_tree`)."""
        self.set_tree(build_task_evidence_tree(packets, items))

    def set_tree(self, root: EvidenceNode) -> None:
        self.beginResetModel()
        self._root = root
        self._by_uid = {}
        self._by_eid = {}
        stack = list(root.children)
        while stack:
            node = stack.pop()
            self._by_uid[node.uid] = node
            if node.evidence_id:
                self._by_eid[normalise_id(node.evidence_id)] = node
            stack.extend(node.children)
        self.endResetModel()

    def node(self, index: AnyIndex) -> EvidenceNode | None:
        if not index.isValid():
            return None
        return self._by_uid.get(index.internalId())

    def index_for_evidence_id(self, evidence_id: str) -> QModelIndex:
        """Column-0 index of the item with this id (``e3``, ``[E3]`` accepted), invalid if absent."""
        node = self._by_eid.get(normalise_id(evidence_id))
        return QModelIndex() if node is None else self.createIndex(node.row, 0, node.uid)

    def evidence_ids(self) -> list[str]:
        return sorted(self._by_eid, key=lambda e: (len(e), e))

    # ------------------------------------------------------------------ Qt overrides
    def index(self, row: int, column: int, parent: AnyIndex = QModelIndex()) -> QModelIndex:  # noqa: B008
        """QAbstractItemModel.index: the child at (row, column) under ``parent``."""
        if not self.hasIndex(row, column, parent):
            return QModelIndex()
        owner = self.node(parent) if parent.isValid() else self._root
        if owner is None or not 0 <= row < len(owner.children):
            return QModelIndex()
        return self.createIndex(row, column, owner.children[row].uid)

    def parent(self, index: AnyIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        """QAbstractItemModel.parent: the index of the node holding ``index`` (invalid for top level)."""
        node = self.node(index)
        if node is None or node.parent is None or node.parent is self._root:
            return QModelIndex()
        return self.createIndex(node.parent.row, 0, node.parent.uid)

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """QAbstractItemModel.rowCount: children of ``parent``; only column 0 has children."""
        if parent.column() > 0:
            return 0
        owner = self.node(parent) if parent.isValid() else self._root
        return 0 if owner is None else len(owner.children)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """QAbstractItemModel.columnCount: the same three columns at every level."""
        return len(self.COLUMNS)

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """QAbstractItemModel.data: label / id / detail as text, plus content and id roles for views."""
        node = self.node(index)
        if node is None:
            return None
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (node.label, node.evidence_id, node.shown_detail)[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            return node.tooltip or None
        if role == Qt.ItemDataRole.ForegroundRole and node.is_error:
            return QColor("#d0433b")
        if role == Qt.ItemDataRole.FontRole and (
            (column == 1 and node.evidence_id) or (column == 0 and node.kind == "attempt")
        ):
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.BackgroundRole and node.is_new:
            return QColor(46, 160, 67, 40)  # a light tint: new in the attempt under review
        if role == self.ContentRole:
            return node.content
        if role == self.EvidenceIdRole:
            return node.evidence_id
        if role == self.KindRole:
            return node.kind
        if role == self.NewRole:
            return node.is_new
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """QAbstractItemModel.headerData: column titles."""
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.DisplayRole
            and 0 <= section < len(self.COLUMNS)
        ):
            return self.COLUMNS[section]
        return None

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        """QAbstractItemModel.flags: read-only, selectable."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
