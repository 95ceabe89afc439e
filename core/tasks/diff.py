"""What changed between two attempts of a task: answer, verdict, evidence and the prompt between.

Pure functions over a ``TaskDossier``, so ``diff`` on the command line, the desk's Diff view and
any report tell the same story. The word diff is ``difflib.SequenceMatcher`` over whitespace-split
tokens (a maintained diff, not a hand-rolled one). Evidence ids are task-wide, so the same search
run again in a later attempt gets a new id: items are matched by what they are (kind, tool, label,
node) and compared by content, and each side keeps its own id.

Content is compared by its sha256, never by reading it: a chunk-stored text carries the hash of its
whole in its reference, and an inline text (at most the store's inline limit) is hashed the same
way, so a dossier loaded as an index (``resolve=False``) diffs attempts of a gigabyte each without
reading a byte of their evidence.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
from collections import defaultdict, deque
from typing import Any, Literal

from pydantic import BaseModel

from core.domain.facts import AttemptState, FinishReason
from core.domain.records import AttemptRecord
from core.errors import InvalidRequest
from core.evidence.render import EvidenceItem, render_packet
from core.store import Store
from core.tasks.dossier import TaskDossier, load_dossier

Op = Literal["equal", "insert", "delete"]


class WordChunk(BaseModel):
    """A run of words that is in both answers (``equal``), only in B (``insert``) or only in A."""

    op: Op
    text: str


class FieldChange(BaseModel):
    name: str
    a: str | float | None
    b: str | float | None

    @property
    def changed(self) -> bool:
        return self.a != self.b


class CitationChange(BaseModel):
    """A citation (by claim and evidence id) whose verdict or check differs between the verdicts."""

    claim: str
    evidence_id: str
    a: str | None  # "verdict/check" on A's side, None when A did not cite it
    b: str | None


class VerdictDiff(BaseModel):
    fields: list[FieldChange]
    issues_added: list[str]
    issues_removed: list[str]
    citations_changed: list[CitationChange]


class EvidenceChange(BaseModel):
    key: str
    a_id: str | None
    b_id: str | None
    change: Literal["added", "removed", "changed"]


class AttemptDiff(BaseModel):
    task_id: str
    a: int
    b: int
    answer: list[WordChunk]
    words_added: list[str]
    words_removed: list[str]
    verdict: VerdictDiff
    evidence: list[EvidenceChange]
    evidence_unchanged: int
    revision_prompt: str | None  # the prompt attempt B ran with, when it was a revision
    a_no_answer: str | None = None  # why attempt A produced no answer (``no_answer_reason``), if it did not
    b_no_answer: str | None = None
    no_evidence: list[int] = []  # attempts of the pair that recorded no evidence packet at all

    @property
    def no_answer(self) -> list[tuple[int, str]]:
        """The attempts of the pair that produced no answer, and why: nothing of theirs to compare."""
        return [(n, why) for n, why in ((self.a, self.a_no_answer), (self.b, self.b_no_answer)) if why]


_NO_ANSWER_WORDS: dict[str, str] = {
    FinishReason.LLM_ERROR: "the model call failed",
    FinishReason.EMPTY_RESPONSE: "the model returned an empty answer",
    FinishReason.STOP: "the model returned an empty answer",
    FinishReason.MAX_TOOL_ITERATIONS_UNFINALIZED: "the tool budget ran out before a final answer",
    FinishReason.CANCELLED: "it was cancelled",
    FinishReason.INTERRUPTED: "the process running it stopped",
    AttemptState.FAILED: "an unexpected error stopped it",
    AttemptState.CANCELLED: "it was cancelled",
    AttemptState.INTERRUPTED: "the process running it stopped",
}


def no_answer_reason(attempt: AttemptRecord) -> str | None:
    """Why an attempt that has ended produced no answer, in words; None when it has one or still runs.

    Such an attempt must never read as "finished" beside the others, and a diff against it compares
    nothing: its missing answer is not a deletion and its missing verdict removed no issue.
    """
    if (attempt.final_output or "").strip() or attempt.state is AttemptState.RUNNING:
        return None
    why = str(attempt.finish_reason or attempt.state)
    return _NO_ANSWER_WORDS.get(why, why.replace("_", " "))


def word_diff(a: str, b: str) -> list[WordChunk]:
    """Word-level diff; a replaced run shows as its deletion, then its insertion."""
    wa, wb = a.split(), b.split()
    chunks: list[WordChunk] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if tag == "equal":
            chunks.append(WordChunk(op="equal", text=" ".join(wa[i1:i2])))
            continue
        if i2 > i1:
            chunks.append(WordChunk(op="delete", text=" ".join(wa[i1:i2])))
        if j2 > j1:
            chunks.append(WordChunk(op="insert", text=" ".join(wb[j1:j2])))
    return chunks


def _verdict_fields(dossier: TaskDossier, index: int) -> dict[str, Any]:
    v = dossier.validation_for(index)
    if v is None:
        return {"status": "unvalidated", "score": None, "category": None, "issues": [], "citations": {}}
    citations = {
        (
            str(c.get("claim", "")),
            str(c.get("evidence_id", "")),
        ): f"{c.get('verdict', '')}/{c.get('check', 'unchecked')}"
        for c in v.result.get("citations", []) or []
        if isinstance(c, dict)
    }
    return {
        "status": v.status,
        "score": v.score,
        "category": v.category,
        "issues": [str(i) for i in v.result.get("issues", []) or []],
        "citations": citations,
    }


def verdict_diff(dossier: TaskDossier, a: int, b: int) -> VerdictDiff:
    va, vb = _verdict_fields(dossier, a), _verdict_fields(dossier, b)
    fields = [FieldChange(name=n, a=va[n], b=vb[n]) for n in ("status", "score", "category")]
    cites: list[CitationChange] = []
    for key in sorted(set(va["citations"]) | set(vb["citations"])):
        ca, cb = va["citations"].get(key), vb["citations"].get(key)
        if ca != cb:
            cites.append(CitationChange(claim=key[0], evidence_id=key[1], a=ca, b=cb))
    return VerdictDiff(
        fields=fields,
        issues_added=[i for i in vb["issues"] if i not in va["issues"]],
        issues_removed=[i for i in va["issues"] if i not in vb["issues"]],
        citations_changed=cites,
    )


def _item_key(item: EvidenceItem) -> str:
    return " · ".join(p for p in (item.kind, item.node_id or "", item.tool_name or "", item.label) if p)


def _items(dossier: TaskDossier, index: int) -> list[EvidenceItem]:
    packet = dossier.evidence_packet(index)
    if packet is None:
        return []
    return [i for i in render_packet(packet, include_final_output=False).items]


def content_identity(item: EvidenceItem) -> tuple[str, int, str]:
    """The item's kind, length and the sha256 of its text, from its reference when it has one.

    The hash is the chunk store's (the UTF-8 bytes of the whole text), so an inline text and a
    stored one with the same characters are the same evidence whatever the inline limit was.
    """
    ref = item.content_ref
    if ref is not None and item.content_range is None:
        return item.kind, ref.length, ref.sha256
    if ref is not None:
        start, length = item.content_range or (0, ref.length)
        return item.kind, length, f"{ref.sha256}[{start}:{start + length}]"
    data = item.content.encode("utf-8", "surrogatepass")
    return item.kind, len(item.content), hashlib.sha256(data).hexdigest()


def evidence_diff(dossier: TaskDossier, a: int, b: int) -> tuple[list[EvidenceChange], int]:
    """Items added, removed or changed from A to B, and how many stayed the same."""
    items_a, items_b = _items(dossier, a), _items(dossier, b)
    same_content: dict[tuple[str, int, str], deque[int]] = defaultdict(deque)
    for position, x in enumerate(items_b):
        same_content[content_identity(x)].append(position)
    matched: set[int] = set()
    changes: list[EvidenceChange] = []
    unchanged = 0
    pending: list[EvidenceItem] = []
    for item in items_a:  # same content (whatever its key) first: that is the same evidence
        candidates = same_content.get(content_identity(item))
        if candidates:
            matched.add(candidates.popleft())
            unchanged += 1
        else:
            pending.append(item)
    for item in pending:
        key = _item_key(item)
        other = next((p for p, x in enumerate(items_b) if p not in matched and _item_key(x) == key), None)
        if other is not None:
            matched.add(other)
            changes.append(
                EvidenceChange(
                    key=key, a_id=item.evidence_id, b_id=items_b[other].evidence_id, change="changed"
                )
            )
        else:
            changes.append(EvidenceChange(key=key, a_id=item.evidence_id, b_id=None, change="removed"))
    changes += [
        EvidenceChange(key=_item_key(x), a_id=None, b_id=x.evidence_id, change="added")
        for p, x in enumerate(items_b)
        if p not in matched
    ]
    return changes, unchanged


def default_pair(dossier: TaskDossier) -> tuple[int, int]:
    """The last two attempts; raises InvalidRequest when the task has fewer than two."""
    indexes = sorted(a.index for a in dossier.attempts)
    if len(indexes) < 2:
        raise InvalidRequest(f"task {dossier.task.id[:12]} has {len(indexes)} attempt(s); a diff needs two")
    return indexes[-2], indexes[-1]


def diff_attempts(dossier: TaskDossier, a: int | None = None, b: int | None = None) -> AttemptDiff:
    """Everything that changed from attempt ``a`` to attempt ``b`` (default: the last two)."""
    if a is None or b is None:
        da, db = default_pair(dossier)
        a, b = a if a is not None else da, b if b is not None else db
    att_a, att_b = dossier.attempt(a), dossier.attempt(b)
    for n, att in ((a, att_a), (b, att_b)):
        if att is None:
            raise InvalidRequest(f"task {dossier.task.id[:12]} has no attempt {n}")
    assert att_a is not None and att_b is not None
    chunks = word_diff(att_a.final_output or "", att_b.final_output or "")
    # An attempt that stopped before its packet was written has no evidence to compare: listing
    # the other side's items as "removed" or "added" would describe a change that never happened.
    missing = [n for n in dict.fromkeys((a, b)) if dossier.evidence_packet(n) is None]
    changes, unchanged = ([], 0) if missing else evidence_diff(dossier, a, b)
    return AttemptDiff(
        task_id=dossier.task.id,
        a=a,
        b=b,
        answer=chunks,
        words_added=[w for c in chunks if c.op == "insert" for w in c.text.split()],
        words_removed=[w for c in chunks if c.op == "delete" for w in c.text.split()],
        verdict=verdict_diff(dossier, a, b),
        evidence=changes,
        evidence_unchanged=unchanged,
        revision_prompt=att_b.prompt if att_b.trigger != "initial" else None,
        a_no_answer=no_answer_reason(att_a),
        b_no_answer=no_answer_reason(att_b),
        no_evidence=missing,
    )


async def load_attempt_diff(
    store: Store, task_id: str, a: int | None = None, b: int | None = None
) -> AttemptDiff:
    """``diff_attempts`` for a task in the store, read as an index: no evidence text is read."""
    dossier = await load_dossier(store, task_id, resolve=False)
    return await asyncio.to_thread(diff_attempts, dossier, a, b)


def format_diff(diff: AttemptDiff) -> str:
    """Plain text for a terminal: ``[-removed-]`` and ``{+added+}`` as ``git diff --word-diff`` does."""
    words = " ".join(
        c.text if c.op == "equal" else (f"[-{c.text}-]" if c.op == "delete" else f"{{+{c.text}+}}")
        for c in diff.answer
    )
    lines = [f"attempt {diff.a} -> attempt {diff.b} of task {diff.task_id[:12]}"]
    if diff.revision_prompt:
        lines.append(f"revision prompt: {diff.revision_prompt}")
    lines += [f"attempt {n} produced no answer: {why}" for n, why in diff.no_answer]
    lines += ["", "answer:", words, "", "verdict:"]
    for f in diff.verdict.fields:
        mark = "*" if f.changed else " "
        lines.append(f" {mark} {f.name}: {f.a} -> {f.b}")
    lines += [f"   + issue: {i}" for i in diff.verdict.issues_added]
    lines += [f"   - issue: {i}" for i in diff.verdict.issues_removed]
    lines += [
        f"   ~ citation {c.evidence_id} '{c.claim}': {c.a} -> {c.b}" for c in diff.verdict.citations_changed
    ]
    lines += [f"attempt {n} recorded no evidence to compare" for n in diff.no_evidence]
    lines += ["", f"evidence ({diff.evidence_unchanged} unchanged):"]
    lines += [f"   {e.change}: {e.key} ({e.a_id or '-'} -> {e.b_id or '-'})" for e in diff.evidence]
    return "\n".join(lines)


__all__ = [
    "AttemptDiff",
    "content_identity",
    "diff_attempts",
    "format_diff",
    "load_attempt_diff",
    "no_answer_reason",
    "word_diff",
]
