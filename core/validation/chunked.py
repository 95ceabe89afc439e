"""Chunked validation: evidence too large for one request is reviewed in chunks, then judged.

Every item reaches some chunk (big items are cut into parts that keep their id), and the verdict
step sees every chunk's findings and an index of every item, with the attempt that gathered it,
so the accumulated evidence of a task is covered the same way as a single attempt's.

Streaming: the items arrive as an index (big texts are chunk-store references), the plan comes
from token counts cached per stored chunk, and one chunk's items are read (``materialise``),
sent and dropped at a time, so memory is one prompt, not the task. The stored prompt keeps every
chunk's full text only while the evidence totals at most ``FULL_PROMPT_CHARS`` characters; above
that it keeps the first chunk's instructions once and, per chunk, which characters of which item
it carried (with the content's sha256), which is what an auditor needs to rebuild each prompt
from the workspace, without storing the task's evidence a second time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from pydantic import BaseModel

from core.config import Settings
from core.domain.content import ContentRef
from core.domain.facts import VerdictWarning, WarningCode
from core.evidence.content import item_length, materialise
from core.evidence.render import EvidenceItem, render_items
from core.evidence.wrapping import wrap_external
from core.llm.gateway import LLMGateway
from core.llm.structured import SchemaFailure, StructuredOutcome
from core.validation.chunking import ChunkCounts, plan_chunks, plan_chunks_cached
from core.validation.judgement import (
    Judgement,
    add_usage,
    error_result,
    from_outcome,
    prompt_text,
    validator_messages,
)
from core.validation.prompt import one_line, render_template
from core.validation.schema import ChunkFindings, ValidatorOutput

__all__ = ["FULL_PROMPT_CHARS", "MIN_CHUNK_TOKENS", "ChunkStore", "ChunkedContext", "judge_chunked"]

MIN_CHUNK_TOKENS = 256
# Up to this many characters of evidence, the stored prompt is every chunk prompt in full (as
# before streaming); above it, the instructions once plus each chunk's character ranges.
FULL_PROMPT_CHARS = 4 * 1024 * 1024


class ChunkStore(ChunkCounts, Protocol):
    """What of the store chunked validation reads: cached counts and the items' text."""

    def iter_content(self, ref: ContentRef | str) -> AsyncIterator[str]: ...

    async def read_range(self, ref: ContentRef | str, offset: int, length: int) -> str: ...


class ChunkedContext(Protocol):
    """What the chunked strategy needs from the service (kept narrow to avoid an import cycle)."""

    settings: Settings
    gateway: LLMGateway

    async def ask(
        self,
        messages: list[dict[str, Any]],
        output: type[BaseModel],
        on_failure: Callable[[SchemaFailure], Awaitable[None]],
    ) -> StructuredOutcome[Any]: ...


def _span(part: EvidenceItem) -> tuple[str, int, int]:
    start = part.content_range[0] if part.content_range is not None else 0
    return (part.evidence_id, start, item_length(part))


def _manifest(chunk: list[EvidenceItem]) -> str:
    """What a chunk carried, for the stored prompt of a big task: ids, ranges, content hashes."""
    lines = []
    for part in chunk:
        _id, start, length = _span(part)
        where = f"content sha256 {part.content_ref.sha256}" if part.content_ref is not None else "inline text"
        lines.append(
            f"- [{part.evidence_id}] {one_line(part.source)}: characters {start}..{start + length} "
            f"({length} characters) of {where}"
        )
    return "\n".join(lines)


async def judge_chunked(
    ctx: ChunkedContext,
    items: list[EvidenceItem],
    *,
    store: ChunkStore,
    common: dict[str, Any],
    budget: int,
    prompt_tokens: int,
    emit: Callable[[str], Callable[[SchemaFailure], Awaitable[None]]],
    warnings: list[VerdictWarning],
    answer_chars: int,
) -> Judgement:
    """Review ``items`` (an index: big texts may be references) chunk by chunk, then judge."""
    model = ctx.settings.validator_model

    def count(text: str) -> int:
        return ctx.gateway.token_count(model, text)

    chunk_common = {k: common[k] for k in ("task_text", "rules_text", "final_answer")}
    probe = validator_messages(
        render_template(
            "validation_chunk.md.j2",
            chunk_index=999,
            chunk_count=999,
            evidence_text=render_items([], include_warning=True),
            **chunk_common,
        ),
        rubric=False,
    )
    fixed = await asyncio.to_thread(ctx.gateway.token_count, model, probe)
    chunk_tokens = budget - fixed
    if chunk_tokens < MIN_CHUNK_TOKENS:
        warnings.append(
            VerdictWarning(
                code=WarningCode.CONTEXT_OVERFLOW,
                message=f"the task, rules and answer leave {max(chunk_tokens, 0)} of {budget} tokens "
                f"for evidence; chunks of {MIN_CHUNK_TOKENS} tokens may exceed the validator's window",
            )
        )
        chunk_tokens = MIN_CHUNK_TOKENS
    if any(i.content_ref is not None for i in items):
        chunks = await plan_chunks_cached(
            items, chunk_tokens=chunk_tokens, count=count, store=store, model=model
        )
    else:
        chunks = await asyncio.to_thread(plan_chunks, items, chunk_tokens=chunk_tokens, count=count)
    warnings.append(
        VerdictWarning(
            code=WarningCode.CHUNKED_VALIDATION,
            message=f"the evidence did not fit the validator's window; it was reviewed in {len(chunks)} chunks",
            count=len(chunks),
        )
    )
    evidence_chars = sum(item_length(i) for i in items)
    full_prompts = evidence_chars <= FULL_PROMPT_CHARS
    prompts: list[str] = []
    findings: list[dict[str, Any]] = []
    judgement = Judgement(
        result=error_result("no verdict"),
        prompt="",
        strategy="chunked",
        chunk_count=len(chunks),
        prompt_tokens=prompt_tokens,
    )
    sent_chars = 0
    for index, chunk in enumerate(chunks, start=1):
        parts = await materialise(store, chunk)  # this chunk's text only; dropped before the next
        messages = validator_messages(
            render_template(
                "validation_chunk.md.j2",
                chunk_index=index,
                chunk_count=len(chunks),
                evidence_text=render_items(parts),
                **chunk_common,
            ),
            rubric=False,
        )
        del parts
        judgement.chunk_ranges.append([_span(part) for part in chunk])
        if full_prompts:
            prompts.append(f"=== chunk {index} of {len(chunks)} ===\n{prompt_text(messages)}")
        else:
            manifest = (
                f"Evidence not stored again ({evidence_chars} characters in all); this chunk carried:\n"
            )
            manifest += _manifest(chunk)
            if index == 1:
                stored = validator_messages(
                    render_template(
                        "validation_chunk.md.j2",
                        chunk_index=index,
                        chunk_count=len(chunks),
                        evidence_text=manifest,
                        **chunk_common,
                    ),
                    rubric=False,
                )
                prompts.append(f"=== chunk 1 of {len(chunks)} ===\n{prompt_text(stored)}")
            else:
                prompts.append(
                    f"=== chunk {index} of {len(chunks)} (instructions as in chunk 1) ===\n{manifest}"
                )
        outcome = await ctx.ask(messages, ChunkFindings, emit(f"chunk-{index}"))
        del messages
        add_usage(judgement, outcome)
        judgement.chunk_raw_responses.append(outcome.raw)
        if not outcome.ok:
            message = (
                f"chunk {index} of {len(chunks)} could not be reviewed: {outcome.error or outcome.status}"
            )
            judgement.result = error_result(message, outcome.raw)
            judgement.error = message
            judgement.prompt = "\n\n".join(prompts)
            judgement.evidence_chars_in_input = sent_chars + answer_chars
            return judgement
        sent_chars += sum(item_length(part) for part in chunk)
        value = outcome.value
        assert isinstance(value, ChunkFindings)
        findings.append({"chunk": index, **value.model_dump(mode="json")})
    judgement.evidence_chars_in_input = sent_chars + answer_chars
    index_lines = [
        f"- {item.evidence_id}: {one_line(item.source)} (attempt {item.attempt_index}, "
        f"{item_length(item)} characters)"
        for item in items
    ]
    findings_text = wrap_external(json.dumps(findings, ensure_ascii=False, indent=1), label="chunk-findings")
    verdict_messages = validator_messages(
        render_template(
            "validation_verdict.md.j2",
            item_count=len(items),
            evidence_chars=evidence_chars,
            chunk_count=len(chunks),
            evidence_index="\n".join(index_lines) or "(no evidence items)",
            findings_text=findings_text,
            **{**common, "history_text": common["history_pointers_text"]},
        )
    )
    judgement.verdict_prompt_tokens = await asyncio.to_thread(
        ctx.gateway.token_count, model, verdict_messages
    )
    prompts.append(f"=== verdict ===\n{prompt_text(verdict_messages)}")
    judgement.prompt = "\n\n".join(prompts)
    outcome = await ctx.ask(verdict_messages, ValidatorOutput, emit("verdict"))
    final = from_outcome(outcome, prompt=judgement.prompt, strategy="chunked")
    add_usage(judgement, outcome)
    judgement.result, judgement.model_used, judgement.error = final.result, final.model_used, final.error
    return judgement
