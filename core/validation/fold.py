"""Folding chunk findings until the verdict prompt fits the validator's window.

A task of a gigabyte is hundreds of chunks, and their findings together can be longer than the
window the chunks were planned for. The verdict step then sees the findings merged in steps: batches
of findings that fit one request are merged by the validator (a ``ChunkFindings`` reply, like a
chunk's), then the merges are merged, until the whole fits. Every request fits the budget (each
batch is packed by its counted tokens, then the assembled prompt is counted again and halved when
it is over).

Nothing is dropped silently: every entry keeps the chunk numbers it covers, so the verdict prompt
still accounts for every chunk; a merge may only keep findings it was shown (a quote it did not see
is dropped and counted: the citation check could not tell which chunk it came from), and a
``contradicted`` finding the merge left out is put back, since that is what a verdict must see.
Each merge is recorded (level, chunks, findings in and out), and the verdict carries a warning
saying the findings were merged.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from core.evidence.wrapping import wrap_external
from core.llm.structured import SchemaFailure
from core.validation.citations import normalise_id, normalise_quote
from core.validation.judgement import Judgement, add_usage, prompt_text, validator_messages
from core.validation.prompt import render_template
from core.validation.schema import ChunkFindings

__all__ = ["MAX_FOLD_LEVELS", "FindingsEntry", "FoldError", "chunk_ranges", "findings_text", "fold_findings"]

# Each level at least halves the entries of any batch it merges; 16 levels cover 65,536 chunks.
MAX_FOLD_LEVELS = 16
_PER_ENTRY_SLACK = 4  # the list's brackets and commas between entries, counted per entry


class FoldError(Exception):
    """The findings cannot be brought within the window: a merge failed or could not shrink them."""


@dataclass
class FindingsEntry:
    """Findings covering some chunks: one chunk's reply, a part of one, or a merge of several."""

    chunks: list[int]
    findings: list[dict[str, Any]]
    notes: str = ""
    merged: bool = False
    part: str | None = None
    tokens: int = field(default=0, compare=False)

    def as_json(self) -> dict[str, Any]:
        head: dict[str, Any]
        if not self.merged and len(self.chunks) == 1:
            head = {"chunk": self.chunks[0]}
        else:
            head = {"chunks": chunk_ranges(self.chunks), "merged": True}
        if self.part is not None:
            head["part"] = self.part
        return {**head, "findings": self.findings, "notes": self.notes}


def chunk_ranges(chunks: list[int]) -> str:
    """``[1, 2, 3, 7]`` as ``1-3, 7``: a merge of hundreds of chunks names them in a few characters."""
    out: list[str] = []
    ordered = sorted(set(chunks))
    start = prev = ordered[0] if ordered else 0
    for n in ordered[1:]:
        if n != prev + 1:
            out.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = n
        prev = n
    if ordered:
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ", ".join(out)


def findings_text(entries: list[FindingsEntry]) -> str:
    body = json.dumps([e.as_json() for e in entries], ensure_ascii=False, indent=1)
    return wrap_external(body, label="chunk-findings")


def _key(finding: dict[str, Any]) -> tuple[str, str]:
    return normalise_id(str(finding.get("evidence_id", ""))), normalise_quote(str(finding.get("quote", "")))


@dataclass
class _Fold:
    """One fold's fixed inputs, so the helpers below take one argument instead of eight."""

    ask: Callable[..., Awaitable[Any]]
    count: Callable[[list[dict[str, Any]] | str], int]
    emit: Callable[[str], Callable[[SchemaFailure], Awaitable[None]]]
    common: dict[str, Any]
    budget: int
    chunk_count: int
    judgement: Judgement
    prompts: list[str]
    full_prompts: bool

    def messages(self, batch: list[FindingsEntry], level: int) -> list[dict[str, Any]]:
        covered = sorted({c for e in batch for c in e.chunks})
        return validator_messages(
            render_template(
                "validation_merge.md.j2",
                level=level,
                chunks_text=chunk_ranges(covered) or "none",
                chunk_count=self.chunk_count,
                findings_text=findings_text(batch),
                **self.common,
            ),
            rubric=False,
        )

    async def tokens(self, value: list[dict[str, Any]] | str) -> int:
        return await asyncio.to_thread(self.count, value)


async def _measure(fold: _Fold, entries: list[FindingsEntry]) -> None:
    for entry in entries:
        if not entry.tokens:
            entry.tokens = await fold.tokens(json.dumps(entry.as_json(), ensure_ascii=False, indent=1))
            entry.tokens += _PER_ENTRY_SLACK


def _split(entry: FindingsEntry, room: int) -> list[FindingsEntry]:
    """An entry bigger than ``room``, cut between its findings (notes on the last part)."""
    if entry.tokens <= room or len(entry.findings) < 2:
        return [entry]
    per = max(1, entry.tokens // max(len(entry.findings), 1))
    size = max(1, room // per)
    groups = [entry.findings[i : i + size] for i in range(0, len(entry.findings), size)]
    n = len(groups)
    return [
        FindingsEntry(
            chunks=entry.chunks,
            findings=g,
            notes=entry.notes if k == n else "",
            merged=entry.merged,
            part=f"{k}/{n}",
        )
        for k, g in enumerate(groups, start=1)
    ]


def _pack(entries: list[FindingsEntry], room: int) -> list[list[FindingsEntry]]:
    """Greedy in chunk order, so a merge covers a stretch of the trajectory."""
    batches: list[list[FindingsEntry]] = []
    used = 0
    for entry in entries:
        if batches and used + entry.tokens <= room:
            batches[-1].append(entry)
            used += entry.tokens
        else:
            batches.append([entry])
            used = entry.tokens
    return batches


async def _merge(fold: _Fold, batch: list[FindingsEntry], level: int, number: int) -> list[FindingsEntry]:
    """One merge request (halved while its prompt is over the budget); the merged entries."""
    messages = fold.messages(batch, level)
    tokens = await fold.tokens(messages)
    if tokens > fold.budget and len(batch) > 1:
        half = len(batch) // 2
        return [
            *(await _merge(fold, batch[:half], level, number)),
            *(await _merge(fold, batch[half:], level, number)),
        ]
    if len(batch) == 1:
        return batch
    covered = sorted({c for e in batch for c in e.chunks})
    head = f"=== findings merge {level}.{number} (chunks {chunk_ranges(covered)}) ==="
    if fold.full_prompts:
        fold.prompts.append(f"{head}\n{prompt_text(messages)}")
    else:  # a big task's stored prompt: the findings merged are the chunk replies stored beside it
        fold.prompts.append(f"{head}\n(instructions as in validation_merge.md.j2; findings of those entries)")
    outcome = await fold.ask(messages, ChunkFindings, fold.emit(f"merge-{level}-{number}"))
    add_usage(fold.judgement, outcome)
    fold.judgement.chunk_raw_responses.append(outcome.raw)
    if not outcome.ok:
        raise FoldError(
            f"the findings of chunks {chunk_ranges(covered)} could not be merged: "
            f"{outcome.error or outcome.status}"
        )
    value = outcome.value
    assert isinstance(value, ChunkFindings)
    seen = {_key(f) for e in batch for f in e.findings}
    kept = [f.model_dump(mode="json") for f in value.findings if _key(f.model_dump(mode="json")) in seen]
    invented = len(value.findings) - len(kept)
    kept_keys = {_key(f) for f in kept}
    restored: list[dict[str, Any]] = []
    for f in (f for e in batch for f in e.findings if str(f.get("verdict")) == "contradicted"):
        if _key(f) not in kept_keys:
            kept_keys.add(_key(f))
            restored.append(f)
    fold.judgement.findings_fold.append(
        {
            "level": level,
            "chunks": chunk_ranges(covered),
            "entries_in": len(batch),
            "findings_in": sum(len(e.findings) for e in batch),
            "findings_out": len(kept) + len(restored),
            "not_in_inputs_dropped": invented,
            "contradicted_restored": len(restored),
            "prompt_tokens": tokens,
        }
    )
    return [FindingsEntry(chunks=covered, findings=kept + restored, notes=value.notes, merged=True)]


async def fold_findings(
    entries: list[FindingsEntry],
    *,
    room: int,
    ask: Callable[..., Awaitable[Any]],
    count: Callable[[list[dict[str, Any]] | str], int],
    emit: Callable[[str], Callable[[SchemaFailure], Awaitable[None]]],
    common: dict[str, Any],
    budget: int,
    chunk_count: int,
    judgement: Judgement,
    prompts: list[str],
    full_prompts: bool = True,
) -> list[FindingsEntry]:
    """``entries`` (one per chunk, in order) merged until their text takes at most ``room`` tokens.

    ``full_prompts=False`` (a big task) stores one line per merge in ``prompts``, not the request.
    Returns them unchanged when they already fit. Raises ``FoldError`` when a merge fails or the
    findings cannot shrink (one finding bigger than a merge request, or a model that returns as
    much as it is given for ``MAX_FOLD_LEVELS`` levels); the caller fails open on it.
    """
    fold = _Fold(ask, count, emit, common, budget, chunk_count, judgement, prompts, full_prompts)
    await _measure(fold, entries)
    merge_room = budget - await fold.tokens(fold.messages([], MAX_FOLD_LEVELS)) - 16
    level = 0
    while sum(e.tokens for e in entries) > room:
        if len(entries) == 1 and len(entries[0].findings) < 2:
            # Nothing to merge: the prompt around the findings is what is long (a small window).
            # The verdict goes out as it is and the caller says it is over the budget.
            return entries
        level += 1
        if level > MAX_FOLD_LEVELS or merge_room <= 0:
            raise FoldError(
                f"the findings of {chunk_count} chunks did not fit the validator's window "
                f"after {level - 1} merge levels"
            )
        # Parts of at most half a request, so every batch can hold two of them and shrink.
        split = [part for e in entries for part in _split(e, merge_room // 2)]
        await _measure(fold, split)
        batches = _pack(split, merge_room)
        if all(len(b) == 1 for b in batches):
            raise FoldError(
                f"the findings of {chunk_count} chunks cannot be merged within the validator's window "
                f"(each batch of findings alone takes the whole request)"
            )
        merged: list[FindingsEntry] = []
        for number, batch in enumerate(batches, start=1):
            merged += await _merge(fold, batch, level, number)
        await _measure(fold, merged)
        entries = merged
    return entries
