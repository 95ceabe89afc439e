"""Chunked validation: evidence too large for one request is reviewed in chunks, then judged.

Every item reaches some chunk (big items are cut into parts that keep their id), and the verdict
step sees every chunk's findings and an index of every item, with the attempt that gathered it,
so the accumulated evidence of a task is covered the same way as a single attempt's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pydantic import BaseModel

from core.config import Settings
from core.domain.facts import VerdictWarning, WarningCode
from core.evidence.render import RenderedEvidence, render_items
from core.evidence.wrapping import wrap_external
from core.llm.gateway import LLMGateway
from core.llm.structured import SchemaFailure, StructuredOutcome
from core.validation.chunking import plan_chunks
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

__all__ = ["MIN_CHUNK_TOKENS", "ChunkedContext", "judge_chunked"]

MIN_CHUNK_TOKENS = 256


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


async def judge_chunked(
    ctx: ChunkedContext,
    rendered: RenderedEvidence,
    *,
    common: dict[str, Any],
    budget: int,
    prompt_tokens: int,
    emit: Callable[[str], Callable[[SchemaFailure], Awaitable[None]]],
    warnings: list[VerdictWarning],
    answer_chars: int,
) -> Judgement:
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
    chunks = await asyncio.to_thread(plan_chunks, rendered.items, chunk_tokens=chunk_tokens, count=count)
    warnings.append(
        VerdictWarning(
            code=WarningCode.CHUNKED_VALIDATION,
            message=f"the evidence did not fit the validator's window; it was reviewed in {len(chunks)} chunks",
            count=len(chunks),
        )
    )
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
        messages = validator_messages(
            render_template(
                "validation_chunk.md.j2",
                chunk_index=index,
                chunk_count=len(chunks),
                evidence_text=render_items(chunk),
                **chunk_common,
            ),
            rubric=False,
        )
        prompts.append(f"=== chunk {index} of {len(chunks)} ===\n{prompt_text(messages)}")
        outcome = await ctx.ask(messages, ChunkFindings, emit(f"chunk-{index}"))
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
        sent_chars += sum(len(part.content) for part in chunk)
        value = outcome.value
        assert isinstance(value, ChunkFindings)
        findings.append({"chunk": index, **value.model_dump(mode="json")})
    judgement.evidence_chars_in_input = sent_chars + answer_chars
    index_lines = [
        f"- {item.evidence_id}: {one_line(item.source)} (attempt {item.attempt_index}, "
        f"{len(item.content)} characters)"
        for item in rendered.items
    ]
    findings_text = wrap_external(json.dumps(findings, ensure_ascii=False, indent=1), label="chunk-findings")
    verdict_messages = validator_messages(
        render_template(
            "validation_verdict.md.j2",
            item_count=len(rendered.items),
            evidence_chars=sum(len(i.content) for i in rendered.items),
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
