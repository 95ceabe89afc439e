"""Evidence gathered by runs, as synthesis and validation consume it.

Contents are never truncated here; renderers decide presentation, never loss.

A big text read from the store without resolving (``resolve=False``) is a blank ``content`` (or
``output_text``) with a ``*_ref`` to its chunks beside it: read it through
``core.evidence.content``, which streams it. Resolved packets (the default) carry no refs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from core.domain.content import ContentRef
from core.domain.disagreement import Disagreement
from core.domain.facts import FinishReasonOrText, NodeStatus


class ToolEvidence(BaseModel):
    tool_name: str
    tool_call_id: str | None = None
    content: str
    content_ref: ContentRef | None = None  # the text is in the chunk store; ``content`` is blank
    event_payload: dict[str, Any] = Field(default_factory=dict)
    url: str | None = None
    title: str | None = None
    created_at: datetime | None = None
    is_error: bool = False


class RunEvidence(BaseModel):
    run_id: str
    session_id: str
    output_text: str = ""
    output_text_ref: ContentRef | None = None
    finish_reason: FinishReasonOrText = ""  # empty when the run never said (an old or partial packet)
    transcript: list[dict[str, Any]] = Field(default_factory=list)
    tool_results: list[ToolEvidence] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    tools_ignored: bool = False  # offered tools with a corpus to search, and called none (RunEnd)
    # Execution metadata for the validator (seed 004): read from the run's events. None means
    # not recorded (a packet from before these fields existed, or a run that never ended).
    duration_s: float | None = None
    llm_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class NodeVerdict(BaseModel):
    """The verifier's judgement of one team node's output against that node's own evidence (seed 004:
    sub-agent responses go through the verifier), made before the synthesis reads it."""

    run_id: str | None = None  # the node run whose output was judged
    status: str  # a ValidationStatus value, or "skipped" (the policy judged nothing)
    score: float | None = None
    category: str | None = None
    issues: list[str] = Field(default_factory=list)
    advice: str = ""  # the verifier's recommended revision prompt: the retry's instruction
    strategy: str = ""  # single, chunked, pre-check:..., skipped:..., error
    retried: bool = False  # the node was run again with this verdict's feedback


class NodeRunResult(BaseModel):
    node_id: str
    role: str = ""
    status: NodeStatus
    finish_reason: FinishReasonOrText = ""
    output_text: str = ""
    output_text_ref: ContentRef | None = None
    error: str | None = None
    evidence: RunEvidence | None = None
    # Node verification (``verify_team_nodes``): the verdicts in order, the last one on ``evidence``'s
    # run; a rejected-and-retried node keeps the rejected run's evidence in ``rejected_runs``.
    verdicts: list[NodeVerdict] = Field(default_factory=list)
    rejected_runs: list[RunEvidence] = Field(default_factory=list)


class TeamRunResult(BaseModel):
    plan_id: str = ""
    mode: str = ""
    node_results: list[NodeRunResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def run_evidence(self) -> list[RunEvidence]:
        """Every node run's evidence, a retried node's rejected run first."""
        runs: list[RunEvidence] = []
        for n in self.node_results:
            runs.extend(n.rejected_runs)
            if n.evidence is not None:
                runs.append(n.evidence)
        return runs


class TaskEvidencePacket(BaseModel):
    task_id: str
    attempt_index: int
    main_run: RunEvidence | None = None
    team_runs: list[RunEvidence] = Field(default_factory=list)
    team_node_results: list[NodeRunResult] = Field(default_factory=list)
    final_output: str = ""
    # The number of this attempt's first evidence id (E<n>). Ids continue across the attempts of
    # a task so that an id names the same item in every attempt, verdict and view; None for
    # packets recorded before ids were task-wide (they are numbered from E1 on their own).
    evidence_id_start: int | None = Field(default=None, ge=1)
    # Where team nodes state different values for one claim (core.team.disagreement); empty for a
    # single-agent attempt and for packets recorded before marks existed.
    disagreements: list[Disagreement] = Field(default_factory=list)
