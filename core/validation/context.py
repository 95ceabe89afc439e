"""The verifier context sections that are not evidence: execution metadata and previous feedback.

Seed 004 gives the verifier the run's execution facts (finish reason, duration) in a section of
their own, so they are there even when an attempt gathered no evidence at all, and the earlier
verification feedback in a section of its own, so a retry is judged against what was asked of it
however long the conversation grew. Both are built here from recorded facts (the attempt packets,
the stored verdicts and the analyst's revision requests), never from the chat history, and neither
is ever trimmed: they are small next to the evidence.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.domain.event_codec import validation_verdict
from core.domain.evidence import RunEvidence, TaskEvidencePacket
from core.domain.records import FeedbackRecord, ValidationRecord
from core.domain.status import FeedbackAction
from core.evidence.wrapping import neutralise, wrap_external

__all__ = ["execution_metadata", "previous_feedback"]


def _name(text: str) -> str:
    """Names chosen by a plan file or a model (node ids, tools) stay on one inert line."""
    return neutralise(text).replace("\r", " ").replace("\n", " ")


def _run_facts(run: RunEvidence) -> str:
    facts = [f"finish reason `{_name(str(run.finish_reason) or 'not recorded')}`"]
    facts.append(f"duration {run.duration_s:g} s" if run.duration_s is not None else "duration not recorded")
    if run.llm_calls is not None:
        facts.append(f"{run.llm_calls} LLM call{'s' if run.llm_calls != 1 else ''}")
    tools: dict[str, int] = {}
    for tool in run.tool_results:
        tools[tool.tool_name] = tools.get(tool.tool_name, 0) + 1
    errors = sum(1 for t in run.tool_results if t.is_error)
    calls = f"{len(run.tool_results)} tool call{'s' if len(run.tool_results) != 1 else ''}"
    if tools:
        calls += " (" + ", ".join(f"{_name(n)} ×{c}" for n, c in tools.items()) + f"; {errors} failed)"
    facts.append(calls)
    if run.prompt_tokens is not None and run.completion_tokens is not None:
        facts.append(f"tokens {run.prompt_tokens} in / {run.completion_tokens} out")
    else:
        facts.append("tokens not recorded")
    return ", ".join(facts)


def _attempt_lines(packet: TaskEvidencePacket, *, under_review: bool) -> list[str]:
    role = "the attempt under review" if under_review else "an earlier attempt"
    lines = [f"Attempt {packet.attempt_index} ({role}):"]
    team = bool(packet.team_node_results or packet.team_runs)
    main = packet.main_run
    if main is None:
        lines.append("- main run: no run was recorded")
    else:
        lines.append(f"- {'synthesis run' if team else 'main run'}: {_run_facts(main)}")
    for node in packet.team_node_results:
        role_text = f" ({_name(node.role)})" if node.role else ""
        head = f"- team node '{_name(node.node_id)}'{role_text}: status `{node.status}`"
        if node.evidence is not None:
            lines.append(f"{head}, {_run_facts(node.evidence)}")
        else:
            lines.append(f"{head}, no run evidence recorded")
    if not packet.final_output.strip():
        lines.append("- no answer was produced")
    if packet.disagreements:  # values only, never the passages: those are in the evidence section
        lines.append(
            f"- the team's nodes disagree on {len(packet.disagreements)} value"
            f"{'s' if len(packet.disagreements) != 1 else ''} (an answer that picks one should say why; "
            "you may cite the conflicting passages as `contradicted`):"
        )
        lines += [f"  - {_name(d.summary())}" for d in packet.disagreements]
    return lines


def execution_metadata(packets: list[TaskEvidencePacket]) -> str:
    """One block per attempt, oldest first; the last packet is the attempt under review."""
    if not packets:
        return "(no attempt was recorded)"
    last = len(packets) - 1
    blocks = ["\n".join(_attempt_lines(p, under_review=i == last)) for i, p in enumerate(packets)]
    return "\n\n".join(blocks)


def _bullets(title: str, values: list[Any]) -> list[str]:
    texts = [str(v).strip() for v in values if str(v).strip()]
    if not texts:
        return [f"{title}: none"]
    return [f"{title}:", *(f"- {t}" for t in texts)]


def _verdict_block(record: ValidationRecord) -> str:
    result = validation_verdict(record)
    lines = [
        f"Attempt {record.attempt_index}: validator verdict `{record.status}`, "
        f"category `{record.category}`, score {record.score:.2f}"
    ]
    lines += _bullets("Issues", result.issues)
    lines += _bullets("Missing requirements", result.missing_requirements)
    revision = result.recommended_revision_prompt.strip()
    lines.append(f"Revision prompt: {revision}" if revision else "Revision prompt: none")
    return "\n".join(lines)


def _feedback_block(record: FeedbackRecord, attempt_of: dict[str, int]) -> str:
    index = attempt_of.get(record.attempt_id or "")
    after = f" after attempt {index}" if index is not None else ""
    lines = [f"Analyst{after}: asked for a revision"]
    if (record.prompt or "").strip():
        lines.append(f"Revision prompt: {(record.prompt or '').strip()}")
    if (record.note or "").strip():
        lines.append(f"Note: {(record.note or '').strip()}")
    return "\n".join(lines)


def previous_feedback(
    validations: list[ValidationRecord],
    feedback: list[FeedbackRecord],
    *,
    attempt_index: int,
    attempt_ids: dict[str, int],
) -> str:
    """Every verdict of an earlier attempt and every analyst revision request, oldest first, fenced.

    Verdict texts were written by a model that read untrusted evidence, and revision prompts may be
    pasted text, so the whole section is quoted like the rest of the material under judgement.
    Returns "" when there is none (the first attempt).
    """
    entries: list[tuple[datetime, str]] = [
        (v.created_at, _verdict_block(v)) for v in validations if v.attempt_index < attempt_index
    ]
    entries += [
        (f.created_at, _feedback_block(f, attempt_ids))
        for f in feedback
        if f.action == FeedbackAction.REVISE and attempt_ids.get(f.attempt_id or "", 0) < attempt_index
    ]
    if not entries:
        return ""
    entries.sort(key=lambda e: e[0])
    return wrap_external("\n\n".join(text for _, text in entries), label="previous-feedback")
