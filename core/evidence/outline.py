"""An attempt's evidence as an outline: main run, team nodes and their runs, the final output.

The one rule for showing evidence with the ids the validator used. Ids come from
``task_items`` (``core.evidence.render``), as the validator of the attempt under review rendered
them, so ``E3`` in a citation is the ``E3`` row here. Transcripts and the final output are shown
too, but carry no id unless that validator saw them as numbered items (an earlier attempt's
answer). Plain data: the desk's tree model (``desktop.models.evidence_model``) shows it as is.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.domain.evidence import NodeRunResult, RunEvidence, TaskEvidencePacket
from core.evidence.content import item_length
from core.evidence.render import EvidenceItem, task_items, task_wide_ids

__all__ = ["EvidenceNode", "build_evidence_tree", "build_task_evidence_tree", "verdict_summary"]

_FAILED = frozenset({"failed", "cancelled", "budget_exhausted"})
_ids = itertools.count(1)


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
    def shown_detail(self) -> str:
        """The detail column: an item the attempt under review gathered says so first."""
        return _join("new", self.detail) if self.is_new else self.detail

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


def verdict_summary(node: NodeRunResult) -> str:
    """The node's verification in a few words ("verified: rejected → accepted"); empty if never verified."""
    if not node.verdicts:
        return ""
    return "verified: " + " → ".join(v.status for v in node.verdicts)


def _team_node(
    node: NodeRunResult, items: list[EvidenceItem], rejected: list[list[EvidenceItem]] | None = None
) -> EvidenceNode:
    run = node.evidence
    failed = node.status in _FAILED or node.error is not None
    facts = [f"status: {node.status}", f"finish reason: {node.finish_reason or '—'}"]
    if node.role:
        facts.insert(0, f"role: {node.role}")
    if node.error is not None:
        facts.append(f"error: {node.error}")
    for v in node.verdicts:
        issues = "; ".join(v.issues)
        again = ", retried with this feedback" if v.retried else ""
        facts.append(
            f"node verdict: {v.status} ({v.category or 'none'}{again})" + (f": {issues}" if issues else "")
        )
    if run is not None:
        content = _run_summary(f"Team node {node.node_id}", run, facts)
    else:
        content = "\n".join([f"Team node {node.node_id}", *facts, "(no run evidence recorded)"])
    label = f"{node.node_id} ({node.role})" if node.role else node.node_id
    if node.verdicts:  # the verification leads the row (the detail column is narrow); role in the content
        label = f"{node.node_id}: " + " → ".join(v.status for v in node.verdicts)
    tree = EvidenceNode(
        label=label,
        kind="node",
        detail=_join(
            node.status, node.finish_reason, "error" if node.error is not None else "", verdict_summary(node)
        ),
        content=content,
        tooltip=node.error or verdict_summary(node),
        is_error=failed,
    )
    for earlier, earlier_items in zip(node.rejected_runs, rejected or [], strict=False):
        branch = tree.add(
            EvidenceNode(
                label=f"Rejected run {earlier.run_id}",
                kind="run",
                detail="rejected by node verification, retried",
                content=_run_summary(f"Team node {node.node_id}, rejected run", earlier),
            )
        )
        _run_children(branch, earlier, earlier_items)
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
        items = task_items([packet])
    _fill_packet(root, packet, items, final_item=None)
    return root


def build_task_evidence_tree(
    packets: list[TaskEvidencePacket], items: list[EvidenceItem] | None = None
) -> EvidenceNode:
    """Every attempt up to the one under review (the last packet), grouped by attempt.

    Ids come from ``task_items``, as the validator of the last attempt rendered them: ``E7`` is one item in every attempt, and earlier attempts' answers carry ids
    because that validator saw them as items. The items the attempt under review gathered are
    marked new. A single attempt, or packets from before task-wide ids (each numbered from E1 on
    its own), are shown as the one packet, with the ids their own verdict used.
    """
    if not packets:
        return build_evidence_tree(None)
    last = packets[-1]
    if not task_wide_ids(packets):
        return build_evidence_tree(last, items)
    root = EvidenceNode(label="", kind="root")
    if items is None:
        items = task_items(packets)
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
    _add_team(root, packet, take)
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


def _add_team(
    root: EvidenceNode,
    packet: TaskEvidencePacket,
    take: Callable[[str | None, str | None], list[EvidenceItem]],
) -> None:
    """The team's nodes, each with its run's items, and any team run no plan node claims."""
    main = packet.main_run
    covered = {n.evidence.run_id for n in packet.team_node_results if n.evidence is not None}
    covered |= {r.run_id for n in packet.team_node_results for r in n.rejected_runs}
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
                f"  {n.node_id}: {_join(n.status, n.finish_reason, n.error or '', verdict_summary(n))}"
                for n in packet.team_node_results
            ]
            + [f"  unattached run {r.run_id}: {r.finish_reason or '—'}" for r in stray]
        )
        for node in packet.team_node_results:
            rejected = [take(r.run_id, node.node_id) for r in node.rejected_runs]
            run_id = node.evidence.run_id if node.evidence is not None else None
            team.add(_team_node(node, take(run_id, node.node_id), rejected))
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
