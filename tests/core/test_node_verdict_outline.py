"""Node verdicts in the evidence tree the desk shows (issue 32): a verified node says how it was
judged, and a retried node keeps its rejected run, items and all, under it."""

from __future__ import annotations

from core.domain.evidence import NodeRunResult, NodeVerdict, RunEvidence, TaskEvidencePacket, ToolEvidence
from core.domain.facts import NodeStatus
from core.evidence.outline import EvidenceNode, build_evidence_tree, verdict_summary


def _walk(node: EvidenceNode) -> list[EvidenceNode]:
    return [node, *(d for c in node.children for d in _walk(c))]


def test_a_retried_node_shows_both_verdicts_and_its_rejected_run() -> None:
    found = ToolEvidence(tool_name="search_corpus", tool_call_id="c1", content="Everest is 8,849 metres.")
    rejected = RunEvidence(run_id="r1", session_id="s1", output_text="8,000 metres", tool_results=[found])
    retry = RunEvidence(run_id="r2", session_id="s1", output_text="8,849 metres")
    node = NodeRunResult(
        node_id="everest",
        role="Researcher",
        status=NodeStatus.SUCCEEDED,
        output_text="8,849 metres",
        evidence=retry,
        verdicts=[
            NodeVerdict(
                run_id="r1", status="rejected", category="goal_missed", issues=["says 8,000"], retried=True
            ),
            NodeVerdict(run_id="r2", status="accepted", score=0.9),
        ],
        rejected_runs=[rejected],
    )
    packet = TaskEvidencePacket(
        task_id="t", attempt_index=1, team_node_results=[node], final_output="8,849 m"
    )
    tree = _walk(build_evidence_tree(packet))
    [row] = [n for n in tree if n.kind == "node"]
    assert verdict_summary(node) == "verified: rejected → accepted"
    assert row.detail.endswith("verified: rejected → accepted")
    assert row.label == "everest: rejected → accepted" and row.tooltip == "verified: rejected → accepted"
    assert "role: Researcher" in (row.content or "")
    assert "node verdict: rejected (goal_missed, retried with this feedback): says 8,000" in (
        row.content or ""
    )
    [branch] = [c for c in row.children if c.label == "Rejected run r1"]
    assert [c.content for c in branch.children if c.kind == "tool_result"] == ["Everest is 8,849 metres."]
    assert sum(1 for n in tree if n.kind == "tool_result") == 1  # shown once, under the rejected run


def test_an_unverified_node_says_nothing_about_verification() -> None:
    node = NodeRunResult(
        node_id="n",
        status=NodeStatus.SUCCEEDED,
        output_text="x",
        evidence=RunEvidence(run_id="r", session_id="s"),
    )
    assert verdict_summary(node) == ""
