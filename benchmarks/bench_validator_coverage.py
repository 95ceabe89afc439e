"""Validator evidence coverage on a large packet: bytes of evidence in the validator's input / bytes gathered.

Builds a packet of 30 tool results (about 6 MB), validates it through the real gateway and the
scripted provider, and measures coverage independently of the service's own bookkeeping: every
request sent to the validator is recorded, and each item's content is looked up in those requests
in 4 KB segments. Run with the whole packet in one request (the scripted model has no window),
and with chunking forced by a 200,000- and a 32,000-token ``validator_context_tokens``.

Each case runs twice: one attempt, and the same evidence gathered across three attempts (15 tool
results in attempt 1, 15 in attempt 2, none in attempt 3, which answers from what the earlier
attempts found: issue 14's failure). Coverage across attempts is the bytes of evidence from all
attempts found in the last validator's input divided by the bytes gathered over the task (every
tool result and every answer); it should be 100%.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import scratch_dir, scripted_settings
from core.config import Settings
from core.domain.evidence import RunEvidence, TaskEvidencePacket, ToolEvidence
from core.events import EventBus
from core.evidence import evidence_char_length, neutralise, next_evidence_number
from core.llm import LLMGateway
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry
from core.validation import ValidationService

TOOL_RESULTS = 30
ITEM_CHARS = 200_000
SEGMENT = 4096

VERDICT = json.dumps(
    {
        "goal_achievement": "answered",
        "completeness": "complete",
        "rule_compliance": "no rules",
        "status": "accepted",
        "score": 0.9,
        "citations": [],
    }
)
FINDINGS = json.dumps({"findings": [], "notes": ""})


class RecordingGateway(LLMGateway):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, retry_backoff_s=0.001)
        self.sent: list[str] = []

    async def complete(self, **kwargs: Any) -> Any:
        self.sent.append("\n".join(str(m.get("content") or "") for m in kwargs["messages"]))
        return await super().complete(**kwargs)


def _tools(first: int, count: int) -> list[ToolEvidence]:
    tools = []
    for i in range(first, first + count):
        lines, size, j = [], 0, 0
        while size < ITEM_CHARS:
            line = f"doc {i:02d} line {j:05d}: revenue for segment {j % 17} was {1000 + (i * 7919 + j * 104729) % 9000} units."
            lines.append(line)
            size += len(line) + 1
            j += 1
        tools.append(
            ToolEvidence(tool_name="read_document", tool_call_id=f"call_{i}", content="\n".join(lines))
        )
    return tools


def build_packets(attempts: int) -> list[TaskEvidencePacket]:
    """The task's packets, oldest first: the tool results spread over all attempts but the last."""
    per = TOOL_RESULTS // max(attempts - 1, 1)
    packets: list[TaskEvidencePacket] = []
    for index in range(1, attempts + 1):
        count = TOOL_RESULTS if attempts == 1 else (per if index < attempts else 0)
        run = RunEvidence(
            run_id=f"run-{index}",
            session_id="sess-main",
            output_text="",
            tool_results=_tools((index - 1) * per, count),
        )
        answer = f"Attempt {index}: revenue grew in every segment; segment 3 led with 9,412 units."
        packets.append(
            TaskEvidencePacket(
                task_id="bench",
                attempt_index=index,
                main_run=run,
                final_output=answer,
                evidence_id_start=next_evidence_number(packets),
            )
        )
    return packets


def _found(piece: str, haystack: str, hint: int) -> int:
    """Position of ``piece`` in ``haystack`` (searched from ``hint`` first), or -1."""
    at = haystack.find(piece, hint)
    return at if at >= 0 else haystack.find(piece)


def measured_coverage(packets: list[TaskEvidencePacket], sent: list[str]) -> float:
    """Bytes of each item's content found, segment by segment, in what the validator received.

    A chunk boundary can fall inside a segment; then the longest prefix present is counted and the
    rest of the segment is looked up again, so split items are measured exactly.
    """
    haystack = "\n".join(sent)
    contents = []
    for packet in packets:
        contents += [neutralise(t.content) for t in packet.main_run.tool_results] if packet.main_run else []
        contents.append(neutralise(packet.final_output))
    found, pos = 0, 0
    for content in contents:
        for start in range(0, len(content), SEGMENT):
            rest = content[start : start + SEGMENT]
            while rest:
                at = _found(rest, haystack, pos)
                if at >= 0:
                    found, pos = found + len(rest), at
                    break
                lo, hi = 0, len(rest)  # longest present prefix: presence is monotone in length
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if _found(rest[:mid], haystack, pos) >= 0:
                        lo = mid
                    else:
                        hi = mid - 1
                if lo == 0:
                    rest = rest[1:]  # this character never reached the validator
                    continue
                found += lo
                rest = rest[lo:]
    return found / evidence_char_length(packets)


async def run_case(label: str, attempts: int = 1, **overrides: Any) -> float:
    folder = scratch_dir()
    conversations = [
        {"model": "validator", "match": "Findings from the evidence chunks", "turns": [{"content": VERDICT}]},
        {"model": "validator", "match": "Evidence review, chunk", "turns": [{"content": FINDINGS}]},
        {"model": "validator", "turns": [{"content": VERDICT}]},
    ]
    settings = scripted_settings(folder, conversations, **overrides)
    store = await Store.open(settings.db_url)
    try:
        packets = build_packets(attempts)
        packet = packets[-1]
        task = await store.create_task("Summarise revenue by segment")
        for earlier in range(1, attempts):
            await store.create_attempt(task.id, earlier, trigger="initial", prompt="Summarise revenue")
        attempt = await store.create_attempt(task.id, attempts, trigger="initial", prompt="Summarise revenue")
        session = await store.create_session(task_id=task.id, kind="main")
        gateway = RecordingGateway(settings)
        started = time.perf_counter()
        ctx = RunContext(
            store=store, gateway=gateway, tools=ToolRegistry(), settings=settings, bus=EventBus()
        )
        report = await ValidationService(ctx).validate(
            packet,
            task_text="Summarise revenue by segment",
            history=[],
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=attempts,
            session_id=session.id,
            agent_model="gpt-4o",
            earlier=packets[:-1],
        )
        elapsed = time.perf_counter() - started
        gathered = evidence_char_length(packets)
        coverage = measured_coverage(packets, gateway.sent)
        print(
            f"{label:<48} attempts {attempts}  gathered {gathered / 1e6:6.2f} MB  requests {len(gateway.sent):3d}  "
            f"strategy {report.debug['strategy']:<8} chunks {report.debug['chunk_count']:3d}  "
            f"coverage measured {coverage:7.2%}  reported {report.debug['coverage']:7.2%}  "
            f"status {report.result.status}  {elapsed:5.1f} s"
        )
        return coverage
    finally:
        await store.close()


async def main() -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("single request (no window limit)", {}),
        ("chunked (200k-token window)", {"validator_context_tokens": 200_000}),
        ("chunked (32k-token window)", {"validator_context_tokens": 32_000}),
    ]
    across = []
    for label, overrides in cases:
        await run_case(label, **overrides)
        across.append(await run_case(f"{label}, across attempts", attempts=3, **overrides))
    print(f"coverage across attempts (lowest of {len(across)} cases, measured): {min(across):.2%}")


if __name__ == "__main__":
    asyncio.run(main())
