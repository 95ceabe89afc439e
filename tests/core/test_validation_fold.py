"""The chunked verdict is bounded by the window (#18 point 3): findings too long for the verdict
request are merged in steps, every request the provider receives fits the budget, and the verdict
still accounts for every chunk."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from core.config import Settings
from core.domain.content import ContentPolicy
from core.domain.facts import WarningCode
from core.domain.status import ValidationStatus
from core.evidence.content import load_packet
from core.llm import LLMGateway
from core.store import Store
from core.validation.fold import chunk_ranges
from core.validation.service import token_budget
from tests.core.conftest import ScriptFactory
from tests.core.test_validation_stream import stored_task, text_of, validate, verdict

TINY = ContentPolicy(inline_limit=64, chunk_chars=100)
WINDOW = 3000
FINDINGS = re.compile(r'<EXTERNAL-CONTENT label="chunk-findings">\n(.*?)\n</EXTERNAL-CONTENT>', re.DOTALL)
CONTRADICTION = {"claim": "the answer is 42", "evidence_id": "E2", "quote": "s1w3", "verdict": "contradicted"}


class RecordingGateway(LLMGateway):
    """Keeps every request's messages, to measure them as the provider received them."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, retry_backoff_s=0.001)
        self.requests: list[list[dict[str, Any]]] = []

    async def complete(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs["messages"])
        return await super().complete(**kwargs)


def chunk_reply() -> str:
    """A talkative chunk review: a dozen findings of a long claim each, and long notes."""
    supported = [
        {
            "claim": f"claim {k}: " + "the answer rests on the lookup results as reported " * 3,
            "evidence_id": "E1",
            "quote": "s0w1 s0w2",
            "verdict": "supported",
        }
        for k in range(8)
    ]
    return json.dumps({"findings": [*supported, CONTRADICTION], "notes": "nothing else of note " * 20})


def merge_reply() -> str:
    """A merge keeps one finding, invents one quote (to be dropped) and forgets the contradiction."""
    return json.dumps(
        {
            "findings": [
                {"claim": "claim 0", "evidence_id": "E1", "quote": "s0w1 s0w2", "verdict": "supported"},
                {"claim": "made up", "evidence_id": "E1", "quote": "never seen", "verdict": "supported"},
            ],
            "notes": "merged",
        }
    )


def scripted(merge: str) -> list[dict[str, Any]]:
    cite = {"claim": "claim 0", "evidence_id": "E1", "quote": "s0w1 s0w2", "verdict": "supported"}
    return [
        {
            "model": "validator",
            "match": "Findings from the evidence chunks",
            "turns": [{"content": verdict([cite])}],
        },
        {"model": "validator", "match": "Merge of chunk findings", "turns": [{"content": merge}]},
        {"model": "validator", "turns": [{"content": chunk_reply()}]},
    ]


def covered(entry: dict[str, Any]) -> set[int]:
    if "chunk" in entry:
        return {int(entry["chunk"])}
    out: set[int] = set()
    for part in str(entry["chunks"]).split(","):
        first, _, last = part.strip().partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


@pytest.mark.slow
async def test_verdict_over_many_chunks_fits_the_window_and_covers_every_chunk(
    store: Store, make_settings: ScriptFactory
) -> None:
    store.content_policy = TINY
    contents = [text_of(2500, seed) for seed in range(40)]
    task_id, attempt_id, session_id, _ = await stored_task(store, contents)
    index = await load_packet(store, attempt_id)
    assert index is not None
    settings = make_settings(scripted(merge_reply()), validator_context_tokens=WINDOW)
    gateway = RecordingGateway(settings)

    report = await validate(store, settings, index, (task_id, attempt_id, session_id), gateway)

    chunks = report.debug["chunk_count"]
    assert report.debug["strategy"] == "chunked" and chunks >= 16
    flat = sum(len(chunk_reply()) for _ in range(chunks)) // 4  # the flat findings alone, in tokens
    assert flat > WINDOW  # the case this is about: a flat verdict prompt could not fit
    budget = token_budget(WINDOW)
    sizes = [gateway.token_count(settings.validator_model, m) for m in gateway.requests]
    assert max(sizes) <= budget, sizes
    merges = [m for m in gateway.requests if "Merge of chunk findings" in m[1]["content"]]
    assert merges and len(gateway.requests) == chunks + len(merges) + 1
    assert len(report.debug["findings_fold"]) == len(merges)
    assert max(r["level"] for r in report.debug["findings_fold"]) >= 2  # merges of merges

    # Independent of the report: the verdict prompt's findings account for every chunk, once.
    verdict_text = gateway.requests[-1][1]["content"]
    assert "Findings from the evidence chunks" in verdict_text
    (block,) = FINDINGS.findall(verdict_text)
    entries = json.loads(block)
    seen = [c for e in entries for c in covered(e)]
    assert sorted(seen) == list(range(1, chunks + 1))
    # Nothing invented survives a merge; the contradiction every chunk reported does, once per entry.
    quotes = [(f["evidence_id"], f["quote"], f["verdict"]) for e in entries for f in e["findings"]]
    assert ("E1", "never seen", "supported") not in quotes
    assert all(sum(1 for f in e["findings"] if f["verdict"] == "contradicted") == 1 for e in entries)
    fold = report.debug["findings_fold"]
    assert all(r["not_in_inputs_dropped"] == 1 for r in fold)
    assert any(w.code is WarningCode.FINDINGS_MERGED for w in report.warnings)
    assert report.result.status is ValidationStatus.ACCEPTED
    assert report.debug["coverage"] == 1.0


async def test_a_merge_that_fails_is_a_validator_error_not_a_verdict(
    store: Store, make_settings: ScriptFactory
) -> None:
    store.content_policy = TINY
    contents = [text_of(2500, seed) for seed in range(20)]
    task_id, attempt_id, session_id, _ = await stored_task(store, contents)
    index = await load_packet(store, attempt_id)
    assert index is not None
    settings = make_settings(
        scripted("not json at all"), validator_context_tokens=WINDOW, max_schema_retries=0
    )
    gateway = RecordingGateway(settings)
    report = await validate(store, settings, index, (task_id, attempt_id, session_id), gateway)
    assert report.result.status is ValidationStatus.VALIDATOR_ERROR
    assert "could not be merged" in report.result.issues[0]
    assert not any("Findings from the evidence chunks" in m[1]["content"] for m in gateway.requests)


@pytest.mark.slow
async def test_a_long_evidence_index_becomes_ranges_per_attempt(
    store: Store, make_settings: ScriptFactory
) -> None:
    store.content_policy = TINY
    contents = [text_of(90, seed) for seed in range(400)]  # 400 small items: one index line each is too much
    task_id, attempt_id, session_id, _ = await stored_task(store, contents)
    index = await load_packet(store, attempt_id)
    assert index is not None
    reply = json.dumps({"findings": [], "notes": ""})
    conversations = [*scripted(reply)[:2], {"model": "validator", "turns": [{"content": reply}]}]
    settings = make_settings(conversations, validator_context_tokens=WINDOW)
    gateway = RecordingGateway(settings)
    report = await validate(store, settings, index, (task_id, attempt_id, session_id), gateway)
    assert report.debug["evidence_index_summarised"] is True
    verdict_text = gateway.requests[-1][1]["content"]
    assert "- E1..E400 (attempt 1): 400 items (400 tool_result)" in verdict_text
    budget = token_budget(WINDOW)
    assert max(gateway.token_count(settings.validator_model, m) for m in gateway.requests) <= budget


def test_chunk_ranges_name_runs() -> None:
    assert chunk_ranges([7, 1, 2, 3, 9, 10]) == "1-3, 7, 9-10"
    assert chunk_ranges([4]) == "4" and chunk_ranges([]) == ""


async def test_a_big_tasks_stored_prompt_names_each_merge_in_one_line(
    store: Store, make_settings: ScriptFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("core.validation.chunked.FULL_PROMPT_CHARS", 1000)
    store.content_policy = TINY
    contents = [text_of(2500, seed) for seed in range(20)]
    task_id, attempt_id, session_id, _ = await stored_task(store, contents)
    index = await load_packet(store, attempt_id)
    assert index is not None
    settings = make_settings(scripted(merge_reply()), validator_context_tokens=WINDOW)
    gateway = RecordingGateway(settings)
    report = await validate(store, settings, index, (task_id, attempt_id, session_id), gateway)
    merges = [m for m in gateway.requests if "Merge of chunk findings" in m[1]["content"]]
    assert merges and len(report.debug["findings_fold"]) == len(merges)
    (row,) = await store.list_validations(task_id)
    assert row.prompt is not None and "Merge of chunk findings" not in row.prompt
    assert row.prompt.count("(instructions as in validation_merge.md.j2") == len(merges)
