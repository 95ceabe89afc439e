"""The one renderer of gathered evidence.

Synthesis, validation and the desk all read evidence through this module so that an evidence id
(``E3``) means the same thing everywhere: the validator cites ``E3``, the citation checker looks up
``E3`` in the index returned here, and the desk shows the same item. Ids are assigned in packet
order, so rendering the same packet twice gives the same ids, and they continue across the
attempts of a task (a packet starts at its ``evidence_id_start``): attempt 2's first item follows
attempt 1's last, so ``E7`` names one item for the life of the task, whichever attempt is shown.

Nothing is cut by a fixed count: a 60,000-character tool result is rendered whole. Deciding what
fits in a context window is the caller's job (chunked validation uses :func:`render_items` to render a
subset with the original ids).

Every piece of content that came from outside (tool results, agent outputs, and the free-text
metadata next to them such as titles, URLs and error messages) is either fenced with
:func:`wrap_external` or forced onto one quoted, neutralised line, so it cannot forge a fence.
Text is built with lists and one ``join`` because packets can be tens of megabytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel

from core.domain.content import ContentRef
from core.domain.evidence import NodeRunResult, NodeVerdict, RunEvidence, TaskEvidencePacket, ToolEvidence
from core.evidence.injection import injection_warning
from core.evidence.wrapping import EXTERNAL_CONTENT_WARNING, neutralise, wrap_external

__all__ = [
    "EvidenceItem",
    "EvidenceKind",
    "RenderedEvidence",
    "evidence_char_length",
    "next_evidence_number",
    "render_items",
    "render_packet",
    "render_run",
    "render_task",
]

EvidenceKind = Literal["tool_result", "node_output", "run_output", "final_output", "transcript"]


class EvidenceItem(BaseModel):
    evidence_id: str
    kind: EvidenceKind
    attempt_index: int | None = None  # the attempt that gathered it (None outside a task packet)
    label: str
    source: str
    run_id: str | None = None
    session_id: str | None = None
    node_id: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    is_error: bool = False
    url: str | None = None
    title: str | None = None
    content: str
    # A big item read without resolving: ``content`` is blank and the text is in the chunk store.
    # ``content_range`` narrows it to ``(offset, length)`` characters (a part of a split item).
    # Read either through ``core.evidence.content``, never by looking at ``content`` alone.
    content_ref: ContentRef | None = None
    content_range: tuple[int, int] | None = None


class RenderedEvidence(BaseModel):
    text: str
    items: list[EvidenceItem]

    def by_id(self) -> dict[str, EvidenceItem]:
        return {item.evidence_id: item for item in self.items}


def _quoted(value: str) -> str:
    """One line, quoted, escapes visible: for external free text that sits outside a fence."""
    return json.dumps(neutralise(value), ensure_ascii=False)


def _one_line(text: str) -> str:
    """Headers are built partly from names an LLM chose (tool names); keep them on one line and
    unable to forge a fence."""
    return neutralise(text).replace("\r", "\\r").replace("\n", "\\n")


def _item_header(item: EvidenceItem) -> str:
    parts = [f"[{item.evidence_id}] {item.kind.replace('_', ' ')}: {item.source}"]
    if item.url:
        parts.append(f"url: {_quoted(item.url)}")
    if item.title:
        parts.append(f"title: {_quoted(item.title)}")
    if item.is_error:
        parts.append("ERROR")
    if item.attempt_index is not None:
        parts.append(f"attempt {item.attempt_index}")
    warning = injection_warning(f"{item.title or ''}\n{item.content}")
    if warning is not None:  # the reader (validator, analyst) sees it above the fenced text
        parts.append(warning)
    return _one_line(" | ".join(parts))


def _item_block(item: EvidenceItem) -> str:
    return f"{_item_header(item)}\n{wrap_external(item.content, label=item.label, item_id=item.evidence_id)}"


def render_items(items: list[EvidenceItem], *, include_warning: bool = True) -> str:
    """Render a subset of items with their original ids (chunked validation, desk previews)."""
    parts: list[str] = [EXTERNAL_CONTENT_WARNING] if include_warning else []
    parts.extend(_item_block(item) for item in items)
    return "\n\n".join(parts) + "\n"


class _Builder:
    """Collects sections and items in order; ``text=False`` skips string work (length metrics)."""

    def __init__(self, *, text: bool = True, start: int = 1) -> None:
        self._want_text = text
        self.parts: list[str] = []
        self.items: list[EvidenceItem] = []
        self.next_number = start
        self.attempt_index: int | None = None

    def line(self, text: str) -> None:
        if self._want_text:
            self.parts.append(text)

    def item(self, **fields: Any) -> None:
        item = EvidenceItem(evidence_id=f"E{self.next_number}", attempt_index=self.attempt_index, **fields)
        self.next_number += 1
        self.items.append(item)
        if self._want_text:
            self.parts.append(_item_block(item))

    def result(self) -> RenderedEvidence:
        return RenderedEvidence(text="\n\n".join(self.parts) + "\n", items=self.items)


def _tool_item(b: _Builder, tool: ToolEvidence, *, run: RunEvidence, where: str, node_id: str | None) -> None:
    call = f" ({tool.tool_call_id})" if tool.tool_call_id else ""
    b.item(
        kind="tool_result",
        label=f"tool-result:{tool.tool_name}",
        source=f"{where} / {tool.tool_name}{call}",
        run_id=run.run_id,
        session_id=run.session_id,
        node_id=node_id,
        tool_name=tool.tool_name,
        tool_call_id=tool.tool_call_id,
        is_error=tool.is_error,
        url=tool.url,
        title=tool.title,
        content=tool.content,
        content_ref=tool.content_ref,
    )


def _transcript_text(transcript: Iterable[dict[str, Any]]) -> str:
    lines: list[str] = []
    for message in transcript:
        content = message.get("content")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, default=str)
        extra = {k: v for k, v in message.items() if k not in ("role", "content")}
        suffix = f" {json.dumps(extra, ensure_ascii=False, default=str)}" if extra else ""
        lines.append(f"{message.get('role', '?')}{suffix}: {content}")
    return "\n".join(lines)


def _run_body(
    b: _Builder,
    run: RunEvidence,
    *,
    where: str,
    node_id: str | None,
    output: str | None,
    include_transcript: bool,
    output_ref: ContentRef | None = None,
) -> None:
    """Warnings, tool results, then (optionally) the run's own output as a ``run_output`` item."""
    for warning in run.warnings:
        b.line(f"Run warning: {_quoted(warning)}")
    for tool in run.tool_results:
        _tool_item(b, tool, run=run, where=where, node_id=node_id)
    if include_transcript and run.transcript:
        b.item(
            kind="transcript",
            label=f"transcript:{run.run_id}",
            source=f"{where} transcript",
            run_id=run.run_id,
            session_id=run.session_id,
            node_id=node_id,
            content=_transcript_text(run.transcript),
        )
    if output or output_ref is not None:
        b.item(
            kind="run_output",
            label=f"run-output:{run.run_id}",
            source=f"{where} output",
            run_id=run.run_id,
            session_id=run.session_id,
            node_id=node_id,
            content=output or "",
            content_ref=output_ref,
        )


def _same_text(text: str, ref: ContentRef | None, other: str, other_ref: ContentRef | None) -> bool:
    """Two texts, each inline or a chunk reference (unresolved packet), are equal.

    References are content-addressed, so two compare by hash and a reference against an inline
    text by the hash of that text: an output stored as chunks numbers its items as when resolved.
    """
    if ref is None and other_ref is None:
        return text == other
    if ref is not None and other_ref is not None:
        return ref.sha256 == other_ref.sha256
    stored, inline = (ref, other) if ref is not None else (other_ref, text)
    assert stored is not None
    if stored.length != len(inline):
        return False
    return hashlib.sha256(inline.encode("utf-8", "surrogatepass")).hexdigest() == stored.sha256


def _run_heading(title: str, run: RunEvidence) -> str:
    finish = f", finish_reason: {run.finish_reason}" if run.finish_reason else ""
    return _one_line(f"=== {title} (run {run.run_id}, session {run.session_id}{finish}) ===")


def _verdict_line(verdict: NodeVerdict) -> str:
    """A node verdict as the synthesis and the final validator read it (issues quoted: judge text)."""
    facts = [verdict.status]
    if verdict.category and verdict.category != "none":
        facts.append(f"category {verdict.category}")
    if verdict.score is not None:
        facts.append(f"score {verdict.score:.2f}")
    if verdict.retried:
        facts.append("retried once with this feedback")
    issues = "; ".join(_quoted(i) for i in verdict.issues)
    run = f" of run {verdict.run_id}" if verdict.run_id else ""
    return _one_line(f"Node verdict{run}: {', '.join(facts)}" + (f"; issues: {issues}" if issues else ""))


def _node_section(b: _Builder, node: NodeRunResult, *, include_transcript: bool) -> None:
    where = f"team node '{node.node_id}'"
    facts = [f"status: {node.status}"]
    if node.role:
        facts.insert(0, f"role: {node.role}")
    if node.finish_reason:
        facts.append(f"finish_reason: {node.finish_reason}")
    if node.error is not None:
        facts.append(f"error: {_quoted(node.error)}")
    b.line(_one_line(f"=== Team node '{node.node_id}' ({', '.join(facts)}) ==="))
    for verdict in node.verdicts:
        b.line(_verdict_line(verdict))
    for rejected in node.rejected_runs:
        # What the rejected run found stays evidence: the retry may rest on it.
        b.line(_one_line(f"Rejected run {rejected.run_id}, session {rejected.session_id} (retried)"))
        _run_body(
            b,
            rejected,
            where=f"{where} (rejected run)",
            node_id=node.node_id,
            output=rejected.output_text or None,
            include_transcript=include_transcript,
            output_ref=rejected.output_text_ref,
        )
    run = node.evidence
    if node.output_text or node.output_text_ref is not None or run is None:
        output, output_ref = node.output_text, node.output_text_ref
    else:
        output, output_ref = run.output_text, run.output_text_ref
    if run is None:
        b.line("(no run evidence recorded for this node)")
    else:
        b.line(_one_line(f"Run {run.run_id}, session {run.session_id}"))
        # The run's own output is shown separately only when it differs from the node output.
        has_own = bool(run.output_text) or run.output_text_ref is not None
        differs = has_own and not _same_text(run.output_text, run.output_text_ref, output, output_ref)
        _run_body(
            b,
            run,
            where=where,
            node_id=node.node_id,
            output=run.output_text if differs else None,
            include_transcript=include_transcript,
            output_ref=run.output_text_ref if differs else None,
        )
    if output or output_ref is not None:
        b.item(
            kind="node_output",
            label=f"node-output:{node.node_id}",
            source=where,
            run_id=run.run_id if run is not None else None,
            session_id=run.session_id if run is not None else None,
            node_id=node.node_id,
            is_error=node.error is not None or node.status.is_failure,
            content=output,
            content_ref=output_ref,
        )
    elif run is not None:
        b.line("(node produced no output)")


def _build_packet(
    b: _Builder,
    packet: TaskEvidencePacket,
    *,
    include_final_output: bool,
    include_transcript: bool,
    warning: bool = True,
) -> None:
    # A stored start wins; a packet from before task-wide ids continues the running count, and a
    # start below the running count (never written by this code) cannot make two items share an id.
    b.next_number = max(b.next_number, packet.evidence_id_start or b.next_number)
    b.attempt_index = packet.attempt_index
    if warning:
        b.line(EXTERNAL_CONTENT_WARNING)
    b.line(_one_line(f"Evidence for task {packet.task_id}, attempt {packet.attempt_index}."))
    main = packet.main_run
    if main is not None:
        b.line(_run_heading("Main run", main))
        differs = not _same_text(main.output_text, main.output_text_ref, packet.final_output, None)
        _run_body(
            b,
            main,
            where="main run",
            node_id=None,
            output=main.output_text if differs else None,
            include_transcript=include_transcript,
            output_ref=main.output_text_ref if differs else None,
        )
    covered = {node.evidence.run_id for node in packet.team_node_results if node.evidence is not None}
    covered |= {run.run_id for node in packet.team_node_results for run in node.rejected_runs}
    if main is not None:
        covered.add(main.run_id)
    for node in packet.team_node_results:
        _node_section(b, node, include_transcript=include_transcript)
    for run in packet.team_runs:
        if run.run_id in covered:
            continue
        covered.add(run.run_id)
        b.line(_run_heading("Team run not attached to a plan node", run))
        _run_body(
            b,
            run,
            where=f"team run {run.run_id}",
            node_id=None,
            output=run.output_text or None,
            include_transcript=include_transcript,
            output_ref=run.output_text_ref,
        )
    if include_final_output and packet.final_output:
        b.line("=== Final output ===")
        b.item(kind="final_output", label="final-output", source="final output", content=packet.final_output)


def render_packet(
    packet: TaskEvidencePacket, *, include_final_output: bool = True, include_transcript: bool = False
) -> RenderedEvidence:
    """Render a whole attempt's evidence: main run, team nodes, stray team runs, final output.

    Transcripts are off by default because tool results and outputs already carry their content;
    they exist for debugging views that need the model's own turns.
    """
    b = _Builder(start=packet.evidence_id_start or 1)
    _build_packet(b, packet, include_final_output=include_final_output, include_transcript=include_transcript)
    return b.result()


def render_task(
    packets: list[TaskEvidencePacket],
    *,
    include_last_final_output: bool = False,
    include_transcript: bool = False,
) -> RenderedEvidence:
    """Render the evidence of every attempt so far, oldest first, with task-wide ids.

    A later attempt may answer from what an earlier one found without calling a tool again, so
    the validator of attempt N must see attempts 1..N. Earlier attempts include their final
    answers (an answer is evidence of what was claimed before); the last attempt's answer is the
    one being judged, so by default it is left out, which changes no other id because it is
    always the packet's last item.
    """
    b = _Builder()
    b.line(EXTERNAL_CONTENT_WARNING)
    last = len(packets) - 1
    for position, packet in enumerate(packets):
        role = "the attempt under review" if position == last else "an earlier attempt"
        b.line(_one_line(f"##### Attempt {packet.attempt_index} ({role}) #####"))
        _build_packet(
            b,
            packet,
            include_final_output=include_last_final_output or position != last,
            include_transcript=include_transcript,
            warning=False,
        )
    return b.result()


def next_evidence_number(packets: list[TaskEvidencePacket]) -> int:
    """The first id number of the attempt after ``packets`` (every earlier item, answers included)."""
    b = _Builder(text=False)
    for packet in packets:
        _build_packet(b, packet, include_final_output=True, include_transcript=False, warning=False)
    return b.next_number


def task_wide_ids(packets: list[TaskEvidencePacket]) -> bool:
    """Whether attempts 1..N share one numbering, as the validator of attempt N rendered them.

    A single attempt is its own packet; packets recorded before task-wide ids each number from E1,
    and their verdicts saw only their own attempt.
    """
    return len(packets) > 1 and packets[-1].evidence_id_start is not None


def task_items(packets: list[TaskEvidencePacket]) -> list[EvidenceItem]:
    """The items of attempts 1..N (``packets``, oldest first) numbered as the validator of attempt N
    saw them: the one rule for which ids evidence carries when it is shown (the desk's tree, the
    dossier, a citation's target). The answer under review is never one of them."""
    if not packets:
        return []
    if not task_wide_ids(packets):
        return render_packet(packets[-1], include_final_output=False).items
    return render_task(packets).items


def first_new_id(packets: list[TaskEvidencePacket]) -> str:
    """The id the attempt under review (the last packet) numbers its items from: where a view of
    its evidence opens."""
    start = packets[-1].evidence_id_start if packets else None
    return f"E{start}" if start else "E1"


def render_run(
    run: RunEvidence,
    *,
    title: str | None = None,
    node_id: str | None = None,
    include_output: bool = True,
    include_transcript: bool = False,
    include_warning: bool = True,
) -> RenderedEvidence:
    """Render one run (typically a node's evidence handed to a downstream node or synthesis).

    Ids start at E1: the ids are local to this rendering, not to the packet.
    """
    b = _Builder()
    if include_warning:
        b.line(EXTERNAL_CONTENT_WARNING)
    where = title or (f"team node '{node_id}'" if node_id else f"run {run.run_id}")
    b.line(_run_heading(where, run))
    _run_body(
        b,
        run,
        where=where,
        node_id=node_id,
        output=run.output_text if include_output and run.output_text else None,
        include_transcript=include_transcript,
        output_ref=run.output_text_ref if include_output else None,
    )
    return b.result()


def evidence_char_length(packet: TaskEvidencePacket | list[TaskEvidencePacket]) -> int:
    """Characters of gathered evidence, for coverage metrics (one attempt, or a task's attempts).

    Defined as the total content of the items :func:`render_packet` indexes (tool results, node
    outputs, run outputs not already equal to the final output, the final output), so a coverage
    ratio computed against rendered items always has a consistent denominator.
    """
    b = _Builder(text=False)
    for one in packet if isinstance(packet, list) else [packet]:
        _build_packet(b, one, include_final_output=True, include_transcript=False, warning=False)
    return sum(item.content_ref.length if item.content_ref else len(item.content) for item in b.items)
