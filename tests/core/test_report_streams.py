"""The audit report reads big evidence as references (#18 point 3): only each item's previewed
range is read from the chunk store, and the page is the one a resolved read would give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event

from core.bundle.paths import MachineScrub
from core.bundle.redact import Redactor
from core.bundle.report import PREVIEW_CHARS, build_report_data, workspace_report_data, write_report
from core.domain import TaskEvidencePacket
from core.domain.content import ContentPolicy
from core.domain.evidence import NodeRunResult, RunEvidence, ToolEvidence
from core.domain.facts import NodeStatus
from core.exports.report_multi import write_multi_report
from core.store import Store
from core.tasks.dossier import load_dossier

CHUNK = 1000
BIG = "".join(f"line {i:06d} of the gauge log\n" for i in range(4000))  # ~112k characters


async def chunked_task(store: Store, secret: str = "") -> str:
    """A task whose tool results and a team node's output are stored as chunks."""
    store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=CHUNK)
    task = await store.create_task("How high did the river rise?", title="Gauge")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
    run = RunEvidence(
        run_id="r1",
        session_id="s1",
        tool_results=[
            ToolEvidence(tool_name="read_log", content=secret + BIG),
            ToolEvidence(tool_name="note", content="small note"),
        ],
    )
    node_run = RunEvidence(
        run_id="r2", session_id="s2", tool_results=[ToolEvidence(tool_name="read_log", content=BIG[::-1])]
    )
    node = NodeRunResult(
        node_id="n1", status=NodeStatus.SUCCEEDED, output_text="node says " * 40, evidence=node_run
    )
    packet = TaskEvidencePacket(
        task_id=task.id, attempt_index=1, main_run=run, team_node_results=[node], final_output="5.2 m"
    )
    await store.update_attempt(attempt.id, final_output="5.2 m", packet=packet.model_dump(mode="json"))
    return task.id


class ChunkReads:
    """Counts the statements that read a stored chunk on the store's read engine."""

    def __init__(self, store: Store) -> None:
        self.engine = store.engine.sync_engine
        self.count = 0

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM content_chunks" in statement:
            self.count += 1

    def __enter__(self) -> ChunkReads:
        event.listen(self.engine, "before_cursor_execute", self)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self)


async def test_report_reads_only_the_previewed_ranges(db_url: str, tmp_path: Path) -> None:
    store = await Store.open(db_url)
    try:
        task_id = await chunked_task(store)
        with ChunkReads(store) as reads:
            out = await write_report(store, task_id, tmp_path / "report.html", environ={})
        html = out.read_text(encoding="utf-8")
        # Two big tool results of ~112 chunks each: the page read ~8 chunks per preview, plus the
        # node's output (a model's answer, read whole), never the items themselves.
        total = 2 * -(-len(BIG) // CHUNK)
        assert reads.count <= 2 * (2 * PREVIEW_CHARS // CHUNK + 1) + 1 < total
        assert f"first {PREVIEW_CHARS} of {len(BIG)} characters" in html
        assert "line 000000 of the gauge log" in html and "line 000200 of" not in html
        assert "node says node says" in html
    finally:
        await store.close()


async def test_streamed_rows_are_the_resolved_rows(db_url: str) -> None:
    """Same ids (a node output stored as chunks keeps its number), lengths and previews."""
    store = await Store.open(db_url)
    try:
        task_id = await chunked_task(store)
        redactor, scrub = Redactor.build((), {}), MachineScrub()
        streamed = await workspace_report_data(store, task_id, redactor, scrub)
        resolved = build_report_data(await load_dossier(store, task_id, with_events=False), source="x")
        rows = [[(e.evidence_id, e.length, e.preview) for e in a.evidence] for a in streamed.attempts]
        assert rows == [[(e.evidence_id, e.length, e.preview) for e in a.evidence] for a in resolved.attempts]
        assert [e.evidence_id for e in streamed.attempts[0].evidence] == ["E1", "E2", "E3", "E4", "E5"]
    finally:
        await store.close()


async def test_a_secret_in_a_chunked_preview_is_masked(store: Store, tmp_path: Path) -> None:
    secret = "sk-" + "Q" * 40
    task_id = await chunked_task(store, secret=f"key {secret} ")
    html = (
        await write_report(store, task_id, tmp_path / "r.html", environ={"OPENAI_API_KEY": secret})
    ).read_text(encoding="utf-8")
    assert secret not in html and "line 000000 of the gauge log" in html


async def test_multi_report_streams_each_task(store: Store, tmp_path: Path) -> None:
    first, second = await chunked_task(store), await chunked_task(store)
    with ChunkReads(store) as reads:
        out = await write_multi_report(store, [first, second], tmp_path / "multi.html", environ={})
    html = out.read_text(encoding="utf-8")
    assert html.count(f"first {PREVIEW_CHARS} of {len(BIG)} characters") == 4
    assert reads.count <= 2 * (2 * (2 * PREVIEW_CHARS // CHUNK + 1) + 1)
