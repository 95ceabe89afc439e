"""Validation streams big evidence (#18 point 3): planned from the index, one chunk prompt read at a
time, citations found across stored-chunk boundaries, every character in exactly one prompt."""

from __future__ import annotations

import json
import random
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from core.config import Settings
from core.domain import RunEvidence, TaskEvidencePacket, ToolEvidence
from core.domain.content import ContentPolicy, ContentRef
from core.domain.status import ValidationStatus
from core.domain.validation import CitationCheck
from core.events import EventBus
from core.evidence.content import PIECE, item_length, load_packet
from core.evidence.render import EvidenceItem, render_packet
from core.llm import LLMGateway
from core.runtime import RunContext
from core.store import Store
from core.tools.registry import ToolRegistry
from core.validation import ValidationReport, ValidationService
from core.validation.chunking import plan_chunks_cached
from core.validation.citations import find_quotes, normalise_quote
from tests.core.conftest import ScriptFactory

TINY = ContentPolicy(inline_limit=64, chunk_chars=100)
FENCE = re.compile(r'<EXTERNAL-CONTENT label="[^"]*" id="(E\d+)">\n(.*?)\n</EXTERNAL-CONTENT>', re.DOTALL)


def text_of(n: int, seed: int) -> str:
    """Numbered words, so a lost, repeated or reordered stretch changes the text."""
    words = " ".join(f"s{seed}w{i}" for i in range(n))
    return words[:n]


class CountingReader:
    """The store, with the characters its content readers hand out counted (counters only)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.read_since_prompt = 0
        self.largest_piece = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _saw(self, text: str) -> str:
        self.read_since_prompt += len(text)
        self.largest_piece = max(self.largest_piece, len(text))
        return text

    async def iter_content(self, ref: ContentRef | str) -> AsyncIterator[str]:
        async for piece in self._store.iter_content(ref):
            yield self._saw(piece)

    async def read_range(self, ref: ContentRef | str, offset: int, length: int) -> str:
        return self._saw(await self._store.read_range(ref, offset, length))


class PromptGateway(LLMGateway):
    """Records each prompt's user text and how many characters were read before it was sent."""

    def __init__(self, settings: Settings, reader: CountingReader | None = None) -> None:
        super().__init__(settings, retry_backoff_s=0.001)
        self.reader = reader
        self.texts: list[str] = []
        self.read_per_prompt: list[int] = []

    async def complete(self, **kwargs: Any) -> Any:
        self.texts.append(kwargs["messages"][1]["content"])
        if self.reader is not None:
            self.read_per_prompt.append(self.reader.read_since_prompt)
            self.reader.read_since_prompt = 0
        return await super().complete(**kwargs)


def verdict(citations: list[dict[str, str]] | None = None) -> str:
    return json.dumps(
        {
            "goal_achievement": "the answer gives the fact",
            "completeness": "complete",
            "rule_compliance": "no rules broken",
            "status": "accepted",
            "score": 0.9,
            "citations": citations or [],
        }
    )


def conversations(citations: list[dict[str, str]] | None = None) -> list[dict[str, Any]]:
    return [
        {
            "model": "validator",
            "match": "Findings from the evidence chunks",
            "turns": [{"content": verdict(citations)}],
        },
        {"model": "validator", "turns": [{"content": json.dumps({"findings": [], "notes": "ok"})}]},
    ]


async def stored_task(store: Store, contents: list[str]) -> tuple[str, str, str, TaskEvidencePacket]:
    """A task whose packet is stored (big texts become chunks under the store's policy)."""
    task = await store.create_task("Find the fact")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="Find the fact")
    session = await store.create_session(task_id=task.id, kind="main")
    run = RunEvidence(
        run_id="run-1",
        session_id=session.id,
        output_text="The answer is 42.",
        finish_reason="stop",
        tool_results=[
            ToolEvidence(tool_name="lookup", tool_call_id=f"call_{i}", content=c)
            for i, c in enumerate(contents)
        ],
    )
    packet = TaskEvidencePacket(
        task_id=task.id, attempt_index=1, main_run=run, final_output="The answer is 42."
    )
    await store.update_attempt(attempt.id, packet=packet.model_dump(mode="json"))
    return task.id, attempt.id, session.id, packet


async def validate(
    store: Any,
    settings: Settings,
    packet: TaskEvidencePacket,
    ids: tuple[str, str, str],
    gateway: PromptGateway,
) -> ValidationReport:
    task_id, attempt_id, session_id = ids
    ctx = RunContext(store=store, gateway=gateway, tools=ToolRegistry(), settings=settings, bus=EventBus())
    return await ValidationService(ctx).validate(
        packet,
        task_text="Find the fact",
        history=[],
        task_id=task_id,
        attempt_id=attempt_id,
        attempt_index=1,
        session_id=session_id,
        agent_model="gpt-4o",
    )


def bodies_by_item(texts: list[str]) -> dict[str, str]:
    """Each item's text as the validator received it, its parts joined in the order sent."""
    out: dict[str, str] = {}
    for text in texts:
        for evidence_id, body in FENCE.findall(text):
            out[evidence_id] = out.get(evidence_id, "") + body
    return out


async def test_streamed_chunked_validation_matches_the_inline_one(
    store: Store, make_settings: ScriptFactory
) -> None:
    store.content_policy = TINY
    rng = random.Random(18)
    contents = [text_of(rng.randint(300, 2500), seed) for seed in range(8)]
    task_id, attempt_id, session_id, inline = await stored_task(store, contents)
    index = await load_packet(store, attempt_id)
    assert index is not None and index.main_run is not None
    assert all(t.content_ref is not None and not t.content for t in index.main_run.tool_results)
    # accepted without citations: this test compares the prompts, not the endorsement
    settings = make_settings(conversations(), validator_context_tokens=3000, coherence_min_citations=0)

    before_gw = PromptGateway(settings)
    before = await validate(store, settings, inline, (task_id, attempt_id, session_id), before_gw)
    reader = CountingReader(store)
    after_gw = PromptGateway(settings, reader)
    after = await validate(reader, settings, index, (task_id, attempt_id, session_id), after_gw)

    for report, gw in ((before, before_gw), (after, after_gw)):
        assert report.result.status is ValidationStatus.ACCEPTED and report.debug["strategy"] == "chunked"
        assert report.debug["coverage"] == 1.0
        # Independent of the validator's report: the received prompts hold every item, whole, once.
        got = bodies_by_item(gw.texts[:-1])
        assert [got[f"E{i + 1}"] for i in range(len(contents))] == contents
    assert after.debug["evidence_chars"] == before.debug["evidence_chars"]
    assert after.debug["evidence_item_count"] == before.debug["evidence_item_count"]

    # Memory: what was read before each chunk prompt is that chunk's evidence, never more.
    chunk_chars = [sum(n for _id, _start, n in chunk) for chunk in after.debug["chunk_ranges"]]
    assert len(chunk_chars) == after.debug["chunk_count"] > 2
    chunk_reads = after_gw.read_per_prompt[: len(chunk_chars)]
    assert chunk_reads == chunk_chars and max(chunk_reads) < sum(map(len, contents)) / 2
    assert after_gw.read_per_prompt[-1] == 0  # the verdict prompt reads no evidence text
    assert reader.largest_piece <= PIECE


async def test_quote_across_a_stored_chunk_boundary_is_found(store: Store) -> None:
    store.content_policy = ContentPolicy(inline_limit=4, chunk_chars=8)
    text = "abcdefgHIJKlmno   \n  PQRstuvwxyz" * 3
    ref = await store.put_content(text)
    assert ref.chunks > 4
    item = EvidenceItem(
        evidence_id="E1", kind="tool_result", label="t", source="s", content="", content_ref=ref
    )
    quotes = [
        normalise_quote(q) for q in ("ghijk", "O PQR", "xyzabc", "not there", "mnoq", "fghijklmno pqrstu")
    ]
    assert await find_quotes(store, item, quotes) == {"ghijk", "o pqr", "xyzabc", "fghijklmno pqrstu"}


async def test_citations_are_checked_by_streaming_the_stored_item(
    store: Store, make_settings: ScriptFactory
) -> None:
    store.content_policy = ContentPolicy(inline_limit=16, chunk_chars=8)
    content = "The tide at the harbour peaked at 4.2 metres on Tuesday."
    task_id, attempt_id, session_id, _ = await stored_task(store, [content])
    index = await load_packet(store, attempt_id)
    assert index is not None
    cites = [
        {
            "evidence_id": "E1",
            "quote": "peaked at 4.2 metres",
            "claim": "c",
            "verdict": "supported",
        },  # crosses several 8-character chunks
        {"evidence_id": "E1", "quote": "peaked at 9 metres", "claim": "c", "verdict": "supported"},
        {"evidence_id": "E7", "quote": "tide", "claim": "c", "verdict": "supported"},
    ]
    settings = make_settings([{"model": "validator", "turns": [{"content": verdict(cites)}]}])
    report = await validate(
        store, settings, index, (task_id, attempt_id, session_id), PromptGateway(settings)
    )
    assert report.debug["strategy"] == "single"
    assert [c.check for c in report.result.citations] == [
        CitationCheck.VERIFIED,
        CitationCheck.QUOTE_NOT_FOUND,
        CitationCheck.UNKNOWN_ID,
    ]


async def test_big_task_stores_ranges_not_its_evidence_again(
    store: Store, make_settings: ScriptFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("core.validation.chunked.FULL_PROMPT_CHARS", 1000)
    store.content_policy = TINY
    contents = [text_of(2000, seed) for seed in range(3)]
    task_id, attempt_id, session_id, _ = await stored_task(store, contents)
    index = await load_packet(store, attempt_id)
    assert index is not None
    settings = make_settings(conversations(), validator_context_tokens=3000)
    report = await validate(
        store, settings, index, (task_id, attempt_id, session_id), PromptGateway(settings)
    )
    assert report.debug["strategy"] == "chunked" and report.debug["coverage"] == 1.0
    (row,) = await store.list_validations(task_id)
    assert row.prompt is not None and "s1w5 " not in row.prompt  # no evidence text stored again
    assert "instructions as in chunk 1" in row.prompt and "characters 0.." in row.prompt
    assert all(f"[E{i}]" in row.prompt for i in (1, 2, 3))


async def test_every_character_lands_in_exactly_one_planned_part(store: Store) -> None:
    store.content_policy = TINY
    rng = random.Random(3)
    for trial in range(6):
        contents = [text_of(rng.randint(1, 1500), trial * 10 + k) for k in range(rng.randint(1, 6))]
        packet = TaskEvidencePacket(
            task_id="t",
            attempt_index=1,
            main_run=RunEvidence(
                run_id="r",
                session_id="s",
                tool_results=[ToolEvidence(tool_name="t", content=c) for c in contents],
            ),
        )
        task = await store.create_task(f"plan {trial}")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
        await store.update_attempt(attempt.id, packet=packet.model_dump(mode="json"))
        index = await load_packet(store, attempt.id)
        assert index is not None
        items = render_packet(index, include_final_output=False).items
        plan = await plan_chunks_cached(
            items,
            chunk_tokens=rng.randint(120, 400),
            count=lambda t: max(1, len(t) // 4),
            store=store,
            model="m",
        )
        for item in items:
            spans = sorted(
                (p.content_range or (0, item_length(p)))
                for chunk in plan
                for p in chunk
                if p.evidence_id == item.evidence_id
            )
            edge = 0
            for start, length in spans:
                assert start == edge and length > 0  # no gap, no overlap
                edge += length
            assert edge == item_length(item)


async def test_uncounted_chunks_are_tokenised_off_the_event_loop(store: Store) -> None:
    """The first plan's tokenizer pass runs in worker threads (the desk shares the loop), counts exact."""
    import threading

    store.content_policy = ContentPolicy(inline_limit=4, chunk_chars=10)
    text = text_of(400, 1)
    ref = await store.put_content(text)
    threads: set[int] = set()

    def count(piece: str) -> int:
        threads.add(threading.get_ident())
        return len(piece.split())

    counts = await store.chunk_token_counts(ref, "m", count)
    assert threads and threading.get_ident() not in threads
    assert [n for _s, _n, n in counts] == [len(text[s : s + n].split()) for s, n, _t in counts]
    assert sum(n for _s, n, _t in counts) == len(text)
