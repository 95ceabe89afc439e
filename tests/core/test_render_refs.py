"""A packet read without resolving numbers its evidence exactly as the resolved packet does (#18.3):
a model output stored as chunks (``output_text_ref``) is an item with a reference, never dropped,
so E-ids the validator cited name the same items in the desk's index, the report and search."""

from __future__ import annotations

from core.domain import TaskEvidencePacket
from core.domain.content import ContentPolicy
from core.domain.evidence import NodeRunResult, RunEvidence, ToolEvidence
from core.domain.facts import NodeStatus
from core.evidence.content import item_length, item_text
from core.evidence.render import evidence_char_length, render_packet
from core.store import Store

BIG = "".join(f"row {i:05d} of the survey\n" for i in range(40))  # ~1000 characters
OTHER = BIG.replace("survey", "census")


def _run(run_id: str, output: str, tools: tuple[str, ...] = ()) -> RunEvidence:
    return RunEvidence(
        run_id=run_id,
        session_id=f"s-{run_id}",
        output_text=output,
        tool_results=[ToolEvidence(tool_name="t", content=c) for c in tools],
    )


def _packet(task_id: str) -> TaskEvidencePacket:
    nodes = [
        NodeRunResult(node_id="same", status=NodeStatus.SUCCEEDED, output_text=BIG, evidence=_run("r1", BIG)),
        NodeRunResult(
            node_id="diff", status=NodeStatus.SUCCEEDED, output_text=BIG, evidence=_run("r2", OTHER)
        ),
        NodeRunResult(node_id="runs", status=NodeStatus.SUCCEEDED, evidence=_run("r3", OTHER, (BIG,))),
        NodeRunResult(node_id="none", status=NodeStatus.FAILED, output_text="", error="boom"),
    ]
    return TaskEvidencePacket(
        task_id=task_id,
        attempt_index=1,
        main_run=_run("main", OTHER + "!", (BIG, "small")),
        team_node_results=nodes,
        team_runs=[_run("stray", BIG + "?")],
        final_output="short answer",
    )


async def test_unresolved_render_numbers_items_as_resolved(store: Store) -> None:
    store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=100)
    task = await store.create_task("survey")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    await store.update_attempt(attempt.id, packet=_packet(task.id).model_dump(mode="json"))
    resolved = TaskEvidencePacket.model_validate((await store.get_attempt(attempt.id)).packet)
    raw = TaskEvidencePacket.model_validate((await store.get_attempt(attempt.id, resolve=False)).packet)
    whole, index = render_packet(resolved).items, render_packet(raw).items
    assert [(i.evidence_id, i.kind, i.source) for i in index] == [
        (i.evidence_id, i.kind, i.source) for i in whole
    ]
    assert sum(i.content_ref is not None for i in index) >= 6  # outputs and tool results by reference
    assert [await item_text(store, i) for i in index] == [i.content for i in whole]
    assert [item_length(i) for i in index] == [len(i.content) for i in whole]
    assert evidence_char_length(raw) == evidence_char_length(resolved)
