"""Chunked validation: evidence too large for one request is reviewed in chunks, then judged.

Every item reaches some chunk (big items are cut into parts that keep their id), and the verdict
step sees every chunk's findings and an index of every item, with the attempt that gathered it,
so the accumulated evidence of a task is covered the same way as a single attempt's. The verdict
prompt is bounded by the window like the chunks: findings too long for it are merged in steps
(``core.validation.fold``), and an index of hundreds of items becomes ranges of ids per attempt.

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
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from pydantic import BaseModel

from core.config import Settings
from core.domain.content import ContentRef
from core.domain.facts import VerdictWarning, WarningCode
from core.evidence.content import item_length, materialise
from core.evidence.render import EvidenceItem, render_items
from core.llm.gateway import LLMGateway
from core.llm.structured import SchemaFailure, StructuredOutcome
from core.validation.chunking import ChunkCounts, plan_chunks, plan_chunks_cached
from core.validation.fold import FindingsEntry, FoldError, findings_text, fold_findings
from core.validation.judgement import (
    Judgement,
    add_usage,
    error_result,
    from_outcome,
    prompt_parts,
    prompt_text,
    validator_messages,
)
from core.validation.prompt import one_line, render_template
from core.validation.schema import ChunkFindings, ValidatorOutput

__all__ = ["FULL_PROMPT_CHARS", "MIN_CHUNK_TOKENS", "ChunkStore", "ChunkedContext", "judge_chunked"]

MIN_CHUNK_TOKENS = 256
# The verdict's evidence index lists every item unless that alone takes over 1/INDEX_SHARE of the budget.
INDEX_SHARE = 4
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

    def extend_budget(self, chunks: int) -> None: ...


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
    review = _ChunkedReview(
        ctx, items, store=store, common=common, budget=budget, emit=emit, warnings=warnings
    )
    await review.plan()
    ctx.extend_budget(len(review.chunks))  # a slow judge gets time for every chunk it must read
    judgement = Judgement(
        result=error_result("no verdict"),
        prompt="",
        strategy="chunked",
        chunk_count=len(review.chunks),
        prompt_tokens=prompt_tokens,
    )
    entries = await review.review_chunks(judgement, answer_chars)
    if entries is None:
        return judgement
    verdict_messages = await review.verdict_messages(entries, judgement)
    if verdict_messages is None:
        return judgement
    review.prompts.append(f"=== verdict ===\n{prompt_text(verdict_messages)}")
    judgement.prompt = "\n\n".join(review.prompts)
    outcome = await ctx.ask(verdict_messages, ValidatorOutput, emit("verdict"))
    final = from_outcome(outcome, prompt=judgement.prompt, strategy="chunked")
    add_usage(judgement, outcome)
    judgement.result, judgement.model_used, judgement.error = final.result, final.model_used, final.error
    return judgement


class _ChunkedReview:
    """One chunked validation's steps, in order: plan the chunks, review each, build the verdict.

    It holds what every step shares: the chunks, the stored prompt being assembled (``prompts``),
    and whether that prompt keeps every chunk's text (``full_prompts``).
    """

    def __init__(
        self,
        ctx: ChunkedContext,
        items: list[EvidenceItem],
        *,
        store: ChunkStore,
        common: dict[str, Any],
        budget: int,
        emit: Callable[[str], Callable[[SchemaFailure], Awaitable[None]]],
        warnings: list[VerdictWarning],
    ) -> None:
        self.ctx, self.items, self.store, self.common = ctx, items, store, common
        self.budget, self.emit, self.warnings = budget, emit, warnings
        self.model = ctx.settings.validator_model
        self.chunk_common = {k: common[k] for k in ("task_text", "rules_text", "final_answer")}
        self.evidence_chars = sum(item_length(i) for i in items)
        self.full_prompts = self.evidence_chars <= FULL_PROMPT_CHARS
        self.chunks: list[list[EvidenceItem]] = []
        self.prompts: list[str] = prompt_parts()  # kept by the service if the budget runs out

    def _tokens(self, value: list[dict[str, Any]] | str) -> int:
        return self.ctx.gateway.token_count(self.model, value)

    def _chunk_messages(self, index: int, evidence_text: str) -> list[dict[str, Any]]:
        return validator_messages(
            render_template(
                "validation_chunk.md.j2",
                chunk_index=index,
                chunk_count=len(self.chunks),
                evidence_text=evidence_text,
                **self.chunk_common,
            ),
            rubric=False,
        )

    # ------------------------------------------------------------------ 1. the plan
    async def plan(self) -> None:
        """Cut the items into chunks that fit what the chunk prompt leaves of the budget."""
        probe = validator_messages(
            render_template(
                "validation_chunk.md.j2",
                chunk_index=999,
                chunk_count=999,
                evidence_text=render_items([], include_warning=True),
                **self.chunk_common,
            ),
            rubric=False,
        )
        chunk_tokens = self.budget - await asyncio.to_thread(self._tokens, probe)
        if chunk_tokens < MIN_CHUNK_TOKENS:
            self.warnings.append(
                VerdictWarning(
                    code=WarningCode.CONTEXT_OVERFLOW,
                    message=f"the task, rules and answer leave {max(chunk_tokens, 0)} of {self.budget} tokens "
                    f"for evidence; chunks of {MIN_CHUNK_TOKENS} tokens may exceed the validator's window",
                )
            )
            chunk_tokens = MIN_CHUNK_TOKENS
        count = self._tokens
        if any(i.content_ref is not None for i in self.items):
            self.chunks = await plan_chunks_cached(
                self.items, chunk_tokens=chunk_tokens, count=count, store=self.store, model=self.model
            )
        else:
            self.chunks = await asyncio.to_thread(
                plan_chunks, self.items, chunk_tokens=chunk_tokens, count=count
            )
        self.warnings.append(
            VerdictWarning(
                code=WarningCode.CHUNKED_VALIDATION,
                message=f"the evidence did not fit the validator's window; it was reviewed in {len(self.chunks)} chunks",
                count=len(self.chunks),
            )
        )

    # ------------------------------------------------------------------ 2. the chunks
    async def review_chunks(self, judgement: Judgement, answer_chars: int) -> list[FindingsEntry] | None:
        """Each chunk's findings, in order; None when a chunk could not be reviewed (``judgement``
        then says which, with the prompts sent so far)."""
        entries: list[FindingsEntry] = []
        sent_chars = 0
        total = len(self.chunks)
        for index, chunk in enumerate(self.chunks, start=1):
            parts = await materialise(self.store, chunk)  # this chunk's text only; dropped before the next
            messages = self._chunk_messages(index, render_items(parts))
            del parts
            judgement.chunk_ranges.append([_span(part) for part in chunk])
            self.prompts.append(self._stored_chunk_prompt(index, chunk, messages))
            outcome = await self.ctx.ask(messages, ChunkFindings, self.emit(f"chunk-{index}"))
            del messages
            add_usage(judgement, outcome)
            judgement.chunk_raw_responses.append(outcome.raw)
            if not outcome.ok:
                message = f"chunk {index} of {total} could not be reviewed: {outcome.error or outcome.status}"
                judgement.result = error_result(message, outcome.raw)
                judgement.error = message
                judgement.prompt = "\n\n".join(self.prompts)
                judgement.evidence_chars_in_input = sent_chars + answer_chars
                return None
            sent_chars += sum(item_length(part) for part in chunk)
            value = outcome.value
            assert isinstance(value, ChunkFindings)
            found = value.model_dump(mode="json")
            entries.append(FindingsEntry(chunks=[index], findings=found["findings"], notes=found["notes"]))
        judgement.evidence_chars_in_input = sent_chars + answer_chars
        return entries

    def _stored_chunk_prompt(
        self, index: int, chunk: list[EvidenceItem], messages: list[dict[str, Any]]
    ) -> str:
        """What the stored prompt keeps of one chunk: all of it, or (a big task) what it carried."""
        total = len(self.chunks)
        if self.full_prompts:
            return f"=== chunk {index} of {total} ===\n{prompt_text(messages)}"
        manifest = (
            f"Evidence not stored again ({self.evidence_chars} characters in all); this chunk carried:\n"
        )
        manifest += _manifest(chunk)
        if index == 1:
            stored = self._chunk_messages(index, manifest)
            return f"=== chunk 1 of {total} ===\n{prompt_text(stored)}"
        return f"=== chunk {index} of {total} (instructions as in chunk 1) ===\n{manifest}"

    # ------------------------------------------------------------------ 3. the verdict prompt
    def _verdict_for(self, entries: list[FindingsEntry], index_text: str) -> list[dict[str, Any]]:
        return validator_messages(
            render_template(
                "validation_verdict.md.j2",
                item_count=len(self.items),
                evidence_chars=self.evidence_chars,
                chunk_count=len(self.chunks),
                evidence_index=index_text,
                findings_text=findings_text(entries),
                fold_note=_fold_note(entries),
                **{**self.common, "history_text": self.common["history_pointers_text"]},
            )
        )

    async def _index_text(self, judgement: Judgement) -> tuple[str, int]:
        """The evidence index and the verdict prompt's size without findings.

        Hundreds of items: ranges per attempt, not one line each. Judged by the index's own share
        of the budget (a small window with a long task text must not cost a handful of items their lines).
        """
        index_text = _evidence_index(self.items)
        fixed = await asyncio.to_thread(self._tokens, self._verdict_for([], index_text))
        if (
            len(self.items) > 1
            and await asyncio.to_thread(self._tokens, index_text) > self.budget // INDEX_SHARE
        ):
            index_text = _evidence_index(self.items, summarise=True)
            judgement.index_summarised = True
            fixed = await asyncio.to_thread(self._tokens, self._verdict_for([], index_text))
        return index_text, fixed

    async def verdict_messages(
        self, entries: list[FindingsEntry], judgement: Judgement
    ) -> list[dict[str, Any]] | None:
        """The verdict request, findings folded until it fits; None when folding failed."""
        index_text, fixed = await self._index_text(judgement)
        room = self.budget - fixed
        total = len(self.chunks)
        try:
            for _ in range(3):  # the per-entry counts are estimates: fold tighter if the whole is still over
                entries = await fold_findings(
                    entries,
                    room=room,
                    ask=self.ctx.ask,
                    count=self._tokens,
                    emit=self.emit,
                    common=self.chunk_common,
                    budget=self.budget,
                    chunk_count=total,
                    judgement=judgement,
                    prompts=self.prompts,
                    full_prompts=self.full_prompts,
                )
                messages = self._verdict_for(entries, index_text)
                judgement.verdict_prompt_tokens = await asyncio.to_thread(self._tokens, messages)
                if judgement.verdict_prompt_tokens <= self.budget:
                    break
                room -= judgement.verdict_prompt_tokens - self.budget + 16
            else:
                self.warnings.append(
                    VerdictWarning(
                        code=WarningCode.CONTEXT_OVERFLOW,
                        message=f"the verdict prompt is {judgement.verdict_prompt_tokens} tokens after merging "
                        f"the findings, over the {self.budget}-token budget; it may exceed the validator's window",
                    )
                )
        except FoldError as exc:
            judgement.result = error_result(str(exc))
            judgement.error = str(exc)
            judgement.prompt = "\n\n".join(self.prompts)
            return None
        if judgement.findings_fold:
            merges = len(judgement.findings_fold)
            self.warnings.append(
                VerdictWarning(
                    code=WarningCode.FINDINGS_MERGED,
                    message=f"the findings of the {total} chunks did not fit the validator's window; "
                    f"they were merged in {merges} step{'s' if merges != 1 else ''} before the verdict",
                    count=merges,
                )
            )
        return messages


def _fold_note(entries: list[FindingsEntry]) -> str:
    """What the verdict must know when it reads merges, not every chunk's own reply."""
    if not any(e.merged for e in entries):
        return ""
    return (
        "The findings of all the chunks were too long for this request, so they were merged in steps "
        "(entries marked `merged` name the chunks they cover; every chunk is covered by one entry). "
        "Quotes are copied unchanged from the chunk reviews."
    )


def _evidence_index(items: list[EvidenceItem], *, summarise: bool = False) -> str:
    """One line per item; for a task of hundreds of items, one line per run of an attempt's items."""
    if not items:
        return "(no evidence items)"
    if not summarise:
        return "\n".join(
            f"- {item.evidence_id}: {one_line(item.source)} (attempt {item.attempt_index}, "
            f"{item_length(item)} characters)"
            for item in items
        )
    lines: list[str] = []
    run: list[EvidenceItem] = []

    def close() -> None:
        kinds: dict[str, int] = {}
        for i in run:
            kinds[i.kind] = kinds.get(i.kind, 0) + 1
        what = ", ".join(f"{n} {k}" for k, n in kinds.items())
        ids = run[0].evidence_id if len(run) == 1 else f"{run[0].evidence_id}..{run[-1].evidence_id}"
        lines.append(
            f"- {ids} (attempt {run[0].attempt_index}): {len(run)} items ({what}), "
            f"{sum(item_length(i) for i in run)} characters"
        )

    for item in items:
        if run and item.attempt_index != run[-1].attempt_index:
            close()
            run = []
        run.append(item)
    close()
    return "\n".join(lines)
