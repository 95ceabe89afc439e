"""The evidence packet of one attempt as a tree: main run, team nodes, final output.

Evidence ids come from :func:`core.evidence.render.render_packet` with the same options the
validator used (``include_final_output=False``, no transcripts), so ``E3`` in a citation is the
``E3`` row here. Transcripts and the final output are shown too, but carry no id because the
validator never saw them as numbered items.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from core.domain.evidence import NodeRunResult, RunEvidence, TaskEvidencePacket
from core.evidence.content import item_length
from core.evidence.render import EvidenceItem, render_packet, render_task
from core.validation.citations import normalise_id

__all__ = ["EvidenceNode", "EvidenceTreeModel", "build_evidence_tree", "build_task_evidence_tree"]

_FAILED = frozenset({"failed", "cancelled", "budget_exhausted"})
_ids = itertools.count(1)

AnyIndex = QModelIndex | QPersistentModelIndex


@dataclass(eq=False)
class EvidenceNode:
    label: str
    kind: str  # attempt | group | run | node | transcript | message | tool_result | run_output | node_output | final_output
    evidence_id: str = ""
    detail: str = ""
    content: str | None = None
    tooltip: str = ""
    is_error: bool = False
    is_new: bool = False  # gathered by the attempt under review (the others came from earlier ones)
    item: EvidenceItem | None = None  # the evidence item behind the row (its text may be in the chunk store)
    parent: EvidenceNode | None = None
    children: list[EvidenceNode] = field(default_factory=list)
    uid: int = field(default_factory=lambda: next(_ids))

    def add(self, child: EvidenceNode) -> EvidenceNode:
        child.parent = self
        self.children.append(child)
        return child

    @property
    def paged(self) -> bool:
        """The text is in the chunk store: the viewer pages it instead of holding it."""
        return self.item is not None and self.item.content_ref is not None

    @property
    def length(self) -> int:
        """The text's length in characters, from the index when the text is stored."""
        return item_length(self.item) if self.item is not None else len(self.content or "")

    @property
    def row(self) -> int:
        return 0 if self.parent is None else self.parent.children.index(self)


def _size(text: str | int) -> str:
    return f"{text if isinstance(text, int) else len(text):,} chars"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    stored = message.get("content_ref")
    if isinstance(stored, dict) and not content:  # a big text left in the chunk store
        text = f"[{stored.get('length', 0):,} characters, kept in the workspace: open the tool result to read them]"
    else:
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=2)
    extra = {k: v for k, v in message.items() if k not in ("role", "content", "content_ref")}
    if extra:
        text = f"{text}\n\n{json.dumps(extra, ensure_ascii=False, indent=2, default=str)}"
    return text


def _transcript(run: RunEvidence) -> EvidenceNode:
    node = EvidenceNode(label="Transcript", kind="transcript", detail=_count(len(run.transcript), "message"))
    texts: list[str] = []
    for message in run.transcript:
        role = str(message.get("role", "?"))
        text = _message_text(message)
        texts.append(f"--- {role} ---\n{text}")
        first = next((line for line in text.splitlines() if line.strip()), "")
        label = f"{role}: {first[:80]}" if first else role
        calls = message.get("tool_calls")
        detail = _join(
            _count(len(calls), "tool call") if isinstance(calls, list) and calls else "", _size(text)
        )
        node.add(EvidenceNode(label=label, kind="message", detail=detail, content=text))
    node.content = "\n\n".join(texts)
    return node


def _item_node(item: EvidenceItem) -> EvidenceNode:
    size = _size(item_length(item))  # from the index: a stored text is not read to be listed
    if item.kind == "tool_result":
        label = item.title or item.tool_name or "tool result"
        detail = _join(item.tool_name or "", "ERROR" if item.is_error else "", size)
    elif item.kind == "node_output":
        label = "Node output"
        detail = _join("error" if item.is_error else "", size)
    else:
        label = "Run output"
        detail = size
    tooltip = "\n".join(p for p in (item.source, item.url or "") if p)
    return EvidenceNode(
        label=label,
        kind=item.kind,
        evidence_id=item.evidence_id,
        detail=detail,
        content=item.content,
        tooltip=tooltip,
        is_error=item.is_error,
        item=item,
    )


def _run_summary(title: str, run: RunEvidence, extra: list[str] | None = None) -> str:
    lines = [title, f"run: {run.run_id}", f"session: {run.session_id}"]
    lines += extra or []
    lines.append(f"finish reason: {run.finish_reason or '—'}")
    lines.append(f"tool results: {len(run.tool_results)}")
    if run.warnings:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in run.warnings]
    return "\n".join(lines)


def _run_children(parent: EvidenceNode, run: RunEvidence | None, items: list[EvidenceItem]) -> None:
    if run is not None and run.transcript:
        parent.add(_transcript(run))
    for item in items:
        parent.add(_item_node(item))


def _team_node(node: NodeRunResult, items: list[EvidenceItem]) -> EvidenceNode:
    run = node.evidence
    failed = node.status in _FAILED or node.error is not None
    facts = [f"status: {node.status}", f"finish reason: {node.finish_reason or '—'}"]
    if node.role:
        facts.insert(0, f"role: {node.role}")
    if node.error is not None:
        facts.append(f"error: {node.error}")
    if run is not None:
        content = _run_summary(f"Team node {node.node_id}", run, facts)
    else:
        content = "\n".join([f"Team node {node.node_id}", *facts, "(no run evidence recorded)"])
    label = f"{node.node_id} ({node.role})" if node.role else node.node_id
    tree = EvidenceNode(
        label=label,
        kind="node",
        detail=_join(node.status, node.finish_reason, "error" if node.error is not None else ""),
        content=content,
        tooltip=node.error or "",
        is_error=failed,
    )
    _run_children(tree, run, items)
    return tree


def build_evidence_tree(
    packet: TaskEvidencePacket | None, items: list[EvidenceItem] | None = None
) -> EvidenceNode:
    """The invisible root; ``items`` are the packet's rendered items when already rendered (by the
    dossier, in a worker), else they are rendered here."""
    root = EvidenceNode(label="", kind="root")
    if packet is None:
        return root
    if items is None:
        items = render_packet(packet, include_final_output=False).items
    _fill_packet(root, packet, items, final_item=None)
    return root


def build_task_evidence_tree(
    packets: list[TaskEvidencePacket], items: list[EvidenceItem] | None = None
) -> EvidenceNode:
    """Every attempt up to the one under review (the last packet), grouped by attempt.

    Ids come from :func:`core.evidence.render.render_task`, as the validator of the last attempt
    rendered them: ``E7`` is one item in every attempt, and earlier attempts' answers carry ids
    because that validator saw them as items. The items the attempt under review gathered are
    marked new. A single attempt, or packets from before task-wide ids (each numbered from E1 on
    its own), are shown as the one packet, with the ids their own verdict used.
    """
    if not packets:
        return build_evidence_tree(None)
    last = packets[-1]
    if len(packets) == 1 or last.evidence_id_start is None:
        return build_evidence_tree(last, items)
    root = EvidenceNode(label="", kind="root")
    if items is None:
        items = render_task(packets).items
    for packet in packets:
        under_review = packet is last
        own = [i for i in items if i.attempt_index == packet.attempt_index]
        final = next((i for i in own if i.kind == "final_output"), None)
        own = [i for i in own if i.kind != "final_output"]
        role = "under review" if under_review else "earlier attempt"
        group = root.add(
            EvidenceNode(
                label=f"Attempt {packet.attempt_index}",
                kind="attempt",
                detail=_join(
                    role, f"{_count(len(own), 'new item')}" if under_review else _count(len(own), "item")
                ),
                content=f"Attempt {packet.attempt_index} ({role}): {_count(len(own), 'evidence item')}"
                + ("" if under_review else "; its answer is evidence of what was claimed then, not a fact"),
            )
        )
        _fill_packet(group, packet, own, final_item=final)
        if under_review:
            _mark_new(group)
    return root


def _mark_new(node: EvidenceNode) -> None:
    for child in node.children:
        if child.evidence_id:
            child.is_new = True
        _mark_new(child)


def _fill_packet(
    root: EvidenceNode,
    packet: TaskEvidencePacket,
    items: list[EvidenceItem],
    *,
    final_item: EvidenceItem | None,
) -> None:
    placed: set[str] = set()

    def take(run_id: str | None, node_id: str | None) -> list[EvidenceItem]:
        found = [
            i for i in items if i.evidence_id not in placed and i.run_id == run_id and i.node_id == node_id
        ]
        placed.update(i.evidence_id for i in found)
        return found

    main = packet.main_run
    if main is not None:
        run_node = root.add(
            EvidenceNode(
                label="Main run",
                kind="run",
                detail=_join(
                    main.finish_reason, _count(len(main.warnings), "warning") if main.warnings else ""
                ),
                content=_run_summary("Main run", main),
                tooltip="\n".join(main.warnings),
            )
        )
        _run_children(run_node, main, take(main.run_id, None))
    covered = {n.evidence.run_id for n in packet.team_node_results if n.evidence is not None}
    if main is not None:
        covered.add(main.run_id)
    stray = [r for r in packet.team_runs if r.run_id not in covered]
    if packet.team_node_results or stray:
        failed = sum(1 for n in packet.team_node_results if n.status in _FAILED)
        team = root.add(
            EvidenceNode(
                label="Team",
                kind="group",
                detail=_join(
                    _count(len(packet.team_node_results), "node"), f"{failed} failed" if failed else ""
                ),
            )
        )
        team.content = "\n".join(
            ["Team nodes of this attempt:"]
            + [
                f"  {n.node_id}: {_join(n.status, n.finish_reason, n.error or '')}"
                for n in packet.team_node_results
            ]
            + [f"  unattached run {r.run_id}: {r.finish_reason or '—'}" for r in stray]
        )
        for node in packet.team_node_results:
            run_id = node.evidence.run_id if node.evidence is not None else None
            team.add(_team_node(node, take(run_id, node.node_id)))
        for run in stray:
            tree = team.add(
                EvidenceNode(
                    label=f"Run {run.run_id}",
                    kind="run",
                    detail=run.finish_reason,
                    content=_run_summary("Team run not attached to a plan node", run),
                )
            )
            _run_children(tree, run, take(run.run_id, None))
    leftovers = [i for i in items if i.evidence_id not in placed]
    if leftovers:  # not expected; shown rather than silently dropped
        other = root.add(EvidenceNode(label="Other evidence", kind="group", content=""))
        for item in leftovers:
            other.add(_item_node(item))
    if packet.final_output:
        root.add(
            EvidenceNode(
                label="Final output",
                kind="final_output",
                evidence_id=final_item.evidence_id if final_item is not None else "",
                detail=_size(packet.final_output),
                content=packet.final_output,
            )
        )


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
            detail = _join("new", node.detail) if node.is_new else node.detail
            return (node.label, node.evidence_id, detail)[column]
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
